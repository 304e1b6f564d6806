package server

// conversationRoutes registers OpenAI's Conversations API under /v1.
// PLACEHOLDER: the Conversations API is still to write.
func (s *Server) conversationRoutes() {}
