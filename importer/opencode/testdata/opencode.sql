-- An opencode database, as opencode 1.x writes it (the tables of
-- packages/core/src/session/sql.ts and project/sql.ts that the import
-- reads, with their columns), holding the sessions the tests import.
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text, icon_url text, icon_color text,
  time_created integer NOT NULL, time_updated integer NOT NULL, time_initialized integer, sandboxes text NOT NULL, commands text);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE CASCADE, workspace_id text,
  parent_id text, fork_session_id text, fork_message_id text, slug text NOT NULL, directory text NOT NULL, path text,
  title text NOT NULL, version text NOT NULL, share_url text, summary_additions integer, summary_deletions integer,
  summary_files integer, summary_diffs text, metadata text, cost real DEFAULT 0 NOT NULL, tokens_input integer DEFAULT 0 NOT NULL,
  tokens_output integer DEFAULT 0 NOT NULL, tokens_reasoning integer DEFAULT 0 NOT NULL, tokens_cache_read integer DEFAULT 0 NOT NULL,
  tokens_cache_write integer DEFAULT 0 NOT NULL, revert text, permission text, agent text, model text,
  time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE,
  session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
-- the event-sourced projection of newer versions: not read
CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL, type text NOT NULL, seq integer NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);

INSERT INTO project VALUES ('prj_web','/home/dev/web','git','web',NULL,NULL,1785657600000,1785657600000,NULL,'[]',NULL);
INSERT INTO project VALUES ('prj_api','/home/dev/api','git','api',NULL,NULL,1785657600000,1785657600000,NULL,'[]',NULL);

-- ses_01main: a session in /home/dev/web with a compaction, a failed and an aborted answer, and a prompt not answered yet
INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, revert, time_created, time_updated) VALUES ('ses_01main','prj_web',NULL,'brave-owl','/home/dev/web','Fix the login form','1.18.34',NULL,1785661200000,1785661200000);
INSERT INTO message VALUES ('msg_01a','ses_01main',1785661200000,1785661200000,'{"role":"user","time":{"created":1785661200000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_01a1','msg_01a','ses_01main',1785661200000,1785661200000,'{"type":"text","text":"The login button does nothing. Fix it."}');
INSERT INTO part VALUES ('prt_01a2','msg_01a','ses_01main',1785661200000,1785661200000,'{"type":"file","mime":"image/png","filename":"shot.png","url":"data:image/png;base64,iVBORw0KGgo="}');
INSERT INTO part VALUES ('prt_01a3','msg_01a','ses_01main',1785661200000,1785661200000,'{"type":"file","mime":"text/plain","filename":"login.html","url":"file:///home/dev/web/login.html","source":{"type":"file","path":"login.html","text":{"value":"@login.html","start":0,"end":11}}}');
INSERT INTO part VALUES ('prt_01a4','msg_01a','ses_01main',1785661200000,1785661200000,'{"type":"text","synthetic":true,"text":"Called the Read tool with the following input: {\"filePath\":\"/home/dev/web/login.html\"}"}');
INSERT INTO part VALUES ('prt_01a5','msg_01a','ses_01main',1785661200000,1785661200000,'{"type":"agent","name":"build"}');
INSERT INTO message VALUES ('msg_01b','ses_01main',1785661260000,1785661260000,'{"role":"assistant","time":{"created":1785661260000,"completed":1785661262000},"parentID":"msg_01a","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":100,"output":20,"reasoning":5,"cache":{"read":1000,"write":0}},"finish":"tool-calls"}');
INSERT INTO part VALUES ('prt_01b1','msg_01b','ses_01main',1785661260000,1785661260000,'{"type":"step-start","snapshot":"4b825dc"}');
INSERT INTO part VALUES ('prt_01b2','msg_01b','ses_01main',1785661260000,1785661260000,'{"type":"reasoning","text":"Look at the click handler.","time":{"start":1785661260000,"end":1785661261000}}');
INSERT INTO part VALUES ('prt_01b3','msg_01b','ses_01main',1785661260000,1785661260000,'{"type":"text","text":"Let me read the form."}');
INSERT INTO part VALUES ('prt_01b4','msg_01b','ses_01main',1785661260000,1785661260000,'{"type":"tool","callID":"toolu_01","tool":"read","state":{"status":"completed","input":{"filePath":"/home/dev/web/form.js"},"output":"<file>\nbutton.onclick = null\n</file>","title":"form.js","metadata":{},"time":{"start":1785661260000,"end":1785661261000,"compacted":1785663000000}}}');
INSERT INTO part VALUES ('prt_01b5','msg_01b','ses_01main',1785661260000,1785661260000,'{"type":"tool","callID":"toolu_02","tool":"bash","state":{"status":"error","input":{"command":"npm test","description":"Run the tests"},"error":"exit status 1","time":{"start":1785661260000,"end":1785661262000}}}');
INSERT INTO part VALUES ('prt_01b6','msg_01b','ses_01main',1785661260000,1785661260000,'{"type":"step-finish","reason":"tool-calls","cost":0.01,"tokens":{"input":100,"output":20,"reasoning":5,"cache":{"read":1000,"write":0}}}');
INSERT INTO message VALUES ('msg_01c','ses_01main',1785661320000,1785661320000,'{"role":"assistant","time":{"created":1785661320000,"completed":1785661322000},"parentID":"msg_01a","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":200,"output":30,"reasoning":0,"cache":{"read":1100,"write":50}},"finish":"stop"}');
INSERT INTO part VALUES ('prt_01c1','msg_01c','ses_01main',1785661320000,1785661320000,'{"type":"tool","callID":"toolu_03","tool":"edit","state":{"status":"completed","input":{"filePath":"/home/dev/web/form.js","oldString":"null","newString":"login"},"output":"Edit applied.","title":"form.js","metadata":{},"time":{"start":1785661320000,"end":1785661321000},"attachments":[{"id":"prt_att","sessionID":"ses_01main","messageID":"msg_01c","type":"file","mime":"image/png","url":"data:image/png;base64,AAAA"}]}}');
INSERT INTO part VALUES ('prt_01c2','msg_01c','ses_01main',1785661320000,1785661320000,'{"type":"tool","callID":"toolu_04","tool":"webfetch","state":{"status":"running","input":{"url":"https://example.com"},"time":{"start":1785661320000}}}');
INSERT INTO part VALUES ('prt_01c3','msg_01c','ses_01main',1785661320000,1785661320000,'{"type":"text","text":"Fixed: the handler was never bound."}');
INSERT INTO message VALUES ('msg_01d','ses_01main',1785663000000,1785663000000,'{"role":"user","time":{"created":1785663000000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_01d1','msg_01d','ses_01main',1785663000000,1785663000000,'{"type":"compaction","auto":true}');
INSERT INTO message VALUES ('msg_01e','ses_01main',1785663060000,1785663060000,'{"role":"assistant","time":{"created":1785663060000,"completed":1785663062000},"parentID":"msg_01d","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":3000,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"summary":true,"finish":"stop"}');
INSERT INTO part VALUES ('prt_01e1','msg_01e','ses_01main',1785663060000,1785663060000,'{"type":"text","text":"We fixed the login form: the click handler is bound now."}');
INSERT INTO message VALUES ('msg_01f','ses_01main',1785663600000,1785663600000,'{"role":"user","time":{"created":1785663600000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_01f1','msg_01f','ses_01main',1785663600000,1785663600000,'{"type":"text","text":"Now add a test."}');
INSERT INTO part VALUES ('prt_01f2','msg_01f','ses_01main',1785663600000,1785663600000,'{"type":"text","text":"(a note the user hid)","ignored":true}');
INSERT INTO part VALUES ('prt_01f3','msg_01f','ses_01main',1785663600000,1785663600000,'{"type":"hologram","glow":1}');
INSERT INTO part VALUES ('prt_01f4','msg_01f','ses_01main',1785663600000,1785663600000,'not json');
INSERT INTO message VALUES ('msg_01g','ses_01main',1785663660000,1785663660000,'{"role":');
INSERT INTO message VALUES ('msg_01h','ses_01main',1785663720000,1785663720000,'{"role":"assistant","time":{"created":1785663720000,"completed":1785663722000},"parentID":"msg_01f","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"error":{"name":"APIError","data":{"message":"overloaded","isRetryable":true}}}');
INSERT INTO part VALUES ('prt_01h1','msg_01h','ses_01main',1785663720000,1785663720000,'{"type":"text","text":"Partial answer"}');
INSERT INTO message VALUES ('msg_01i','ses_01main',1785663780000,1785663780000,'{"role":"assistant","time":{"created":1785663780000,"completed":1785663782000},"parentID":"msg_01f","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}');
INSERT INTO part VALUES ('prt_01i1','msg_01i','ses_01main',1785663780000,1785663780000,'{"type":"text","text":"Adding the test..."}');
INSERT INTO message VALUES ('msg_01j','ses_01main',1785664200000,1785664200000,'{"role":"user","time":{"created":1785664200000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_01j1','msg_01j','ses_01main',1785664200000,1785664200000,'{"type":"text","text":"Thanks, keep going."}');

-- ses_02child: a subagent the task tool started from ses_01main
INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, revert, time_created, time_updated) VALUES ('ses_02child','prj_web','ses_01main','brave-owl','/home/dev/web','Find the click handler (@explore subagent)','1.18.34',NULL,1785661290000,1785661290000);
INSERT INTO message VALUES ('msg_02a','ses_02child',1785661290000,1785661290000,'{"role":"user","time":{"created":1785661290000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_02a1','msg_02a','ses_02child',1785661290000,1785661290000,'{"type":"text","text":"Find where the login button''s handler is bound."}');
INSERT INTO message VALUES ('msg_02b','ses_02child',1785661291000,1785661291000,'{"role":"assistant","time":{"created":1785661291000,"completed":1785661293000},"parentID":"msg_02a","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":10,"output":5,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}');
INSERT INTO part VALUES ('prt_02b1','msg_02b','ses_02child',1785661291000,1785661291000,'{"type":"tool","callID":"toolu_g1","tool":"grep","state":{"status":"completed","input":{"pattern":"onclick"},"output":"form.js:1: button.onclick = null","title":"onclick","metadata":{},"time":{"start":1785661291000,"end":1785661292000}}}');
INSERT INTO part VALUES ('prt_02b2','msg_02b','ses_02child',1785661291000,1785661291000,'{"type":"text","text":"It is set to null in form.js, line 1."}');

-- ses_03revert: a session in /home/dev/api whose last turn was undone
INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, revert, time_created, time_updated) VALUES ('ses_03revert','prj_api',NULL,'brave-owl','/home/dev/api','Add a health check','1.18.34','{"messageID":"msg_03c","snapshot":"abc"}',1785664800000,1785664800000);
INSERT INTO message VALUES ('msg_03a','ses_03revert',1785664800000,1785664800000,'{"role":"user","time":{"created":1785664800000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_03a1','msg_03a','ses_03revert',1785664800000,1785664800000,'{"type":"text","text":"Add a /health route."}');
INSERT INTO message VALUES ('msg_03b','ses_03revert',1785664860000,1785664860000,'{"role":"assistant","time":{"created":1785664860000,"completed":1785664862000},"parentID":"msg_03a","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}');
INSERT INTO part VALUES ('prt_03b1','msg_03b','ses_03revert',1785664860000,1785664860000,'{"type":"text","text":"Added GET /health."}');
INSERT INTO message VALUES ('msg_03c','ses_03revert',1785664920000,1785664920000,'{"role":"user","time":{"created":1785664920000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_03c1','msg_03c','ses_03revert',1785664920000,1785664920000,'{"type":"text","text":"Also delete the database."}');
INSERT INTO message VALUES ('msg_03d','ses_03revert',1785664980000,1785664980000,'{"role":"assistant","time":{"created":1785664980000,"completed":1785664982000},"parentID":"msg_03c","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}');
INSERT INTO part VALUES ('prt_03d1','msg_03d','ses_03revert',1785664980000,1785664980000,'{"type":"text","text":"Deleted."}');

-- ses_04live: a session opencode is still answering
INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, revert, time_created, time_updated) VALUES ('ses_04live','prj_api',NULL,'brave-owl','/home/dev/api','New session - 2026-08-02T11:00:00.000Z','1.18.34',NULL,1785668400000,1785668400000);
INSERT INTO message VALUES ('msg_04a','ses_04live',1785668400000,1785668400000,'{"role":"user","time":{"created":1785668400000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO part VALUES ('prt_04a1','msg_04a','ses_04live',1785668400000,1785668400000,'{"type":"text","text":"Explain main.go."}');
INSERT INTO message VALUES ('msg_04b','ses_04live',1785668460000,1785668460000,'{"role":"assistant","time":{"created":1785668460000},"parentID":"msg_04a","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.01,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO part VALUES ('prt_04b1','msg_04b','ses_04live',1785668460000,1785668460000,'{"type":"text","text":"main.go starts"}');
