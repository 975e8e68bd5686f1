package events

// Internals the external tests reach.
var (
	AppendEvent = appendEvent
	NewHubEvery = newHub
	Channel     = channel
)

const PublishAllMax = publishAllMax
