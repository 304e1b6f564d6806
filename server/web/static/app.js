// recall web viewer: keyboard, infinite scroll, live updates. The pages
// work without it; this file only makes them quicker to use. No inline
// script and no eval: the Content-Security-Policy forbids both.
(function () {
  "use strict";

  function nav() { return Array.prototype.slice.call(document.querySelectorAll("[data-nav]")); }
  var current = -1;
  function move(d) {
    var rows = nav();
    if (!rows.length) return;
    if (current >= 0 && rows[current]) rows[current].classList.remove("current");
    current = Math.max(0, Math.min(rows.length - 1, current + d));
    rows[current].classList.add("current");
    rows[current].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (e.key === "/") {
      var q = document.getElementById("q");
      if (q) { e.preventDefault(); q.focus(); q.select(); }
    } else if (e.key === "j") { move(1); } else if (e.key === "k") { move(-1); } else if (e.key === "Enter") {
      var row = nav()[current];
      var a = row && row.querySelector("a.row-link");
      if (a) { e.preventDefault(); window.location.href = a.href; }
    }
  });

  // Picking a project shows its sessions at once.
  var picker = document.getElementById("project");
  if (picker && picker.form) picker.addEventListener("change", function () { picker.form.submit(); });

  function fetchHTML(url, done) {
    var u = url + (url.indexOf("?") < 0 ? "?" : "&") + "frag=1";
    fetch(u, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(done).catch(function () { /* the link still works */ });
  }

  // More sessions as the list is scrolled; older items as a session is.
  function observe(id, load) {
    if (!("IntersectionObserver" in window)) return;
    var busy = false;
    var io = new IntersectionObserver(function (es) {
      es.forEach(function (e) {
        if (!e.isIntersecting || busy) return;
        busy = true;
        load(e.target, function () { busy = false; watch(); });
      });
    }, { rootMargin: "400px" });
    function watch() { io.disconnect(); var el = document.getElementById(id); if (el) io.observe(el); }
    watch();
  }
  var rows = document.getElementById("rows");
  if (rows) {
    observe("more", function (a, done) {
      fetchHTML(a.getAttribute("href"), function (html) {
        a.parentNode.remove();
        rows.insertAdjacentHTML("beforeend", html);
        done();
      });
    });
  }
  var items = document.getElementById("items");
  var session = document.getElementById("session");
  if (items && session) {
    // Open at the newest item (unless a link names one), then load older
    // pages as the reader scrolls up to them.
    if (!location.hash) {
      window.scrollTo(0, document.documentElement.scrollHeight);
    }
    observe("older", function (a, done) {
      fetchHTML(a.getAttribute("href"), function (html) {
        var h = document.documentElement.scrollHeight;
        a.parentNode.remove();
        items.insertAdjacentHTML("afterbegin", html);
        window.scrollBy(0, document.documentElement.scrollHeight - h);
        done();
      });
    });

    // Live updates.
    if ("EventSource" in window) {
      var id = session.getAttribute("data-session");
      var es = new EventSource("/s/" + encodeURIComponent(id) + "/events?after=" + session.getAttribute("data-last-seq"));
      var live = document.getElementById("live");
      var liveText = live ? live.textContent : "";
      var ok = function () {
        if (live) { live.hidden = false; live.classList.remove("stalled"); live.textContent = liveText; }
      };
      es.addEventListener("open", ok);
      // The server could not read the session; it says when it can again.
      es.addEventListener("stalled", function (e) {
        if (live) { live.hidden = false; live.classList.add("stalled"); live.textContent = e.data; }
      });
      es.addEventListener("items", function (e) {
        ok();
        var atEnd = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
        var tpl = document.createElement("template");
        tpl.innerHTML = e.data;
        Array.prototype.slice.call(tpl.content.children).forEach(function (el) {
          if (el.id && document.getElementById(el.id)) return;
          el.classList.add("new");
          items.appendChild(el);
        });
        if (atEnd) window.scrollTo(0, document.documentElement.scrollHeight);
      });
      es.addEventListener("meta", function (e) {
        ok();
        var m = JSON.parse(e.data);
        var c = document.getElementById("count");
        if (c) c.textContent = m.items + (m.items === 1 ? " item" : " items");
        session.setAttribute("data-last-seq", m.last_seq);
      });
      es.addEventListener("reload", function () { es.close(); location.reload(); });
      es.addEventListener("gone", function () { es.close(); location.href = "/"; });
    }
  }
})();
