package fingerprint

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// NotifyOp is what a statement does with asynchronous notifications.
type NotifyOp uint8

// Notification operations.
const (
	// Listen: LISTEN channel.
	Listen NotifyOp = iota + 1
	// Unlisten: UNLISTEN channel, or UNLISTEN * (Channel "").
	Unlisten
	// Notify: NOTIFY channel, or a call of pg_notify (Channel "": its
	// channel is not read from the text, so it may be any).
	Notify
)

// Notification is a statement's LISTEN, UNLISTEN or NOTIFY.
type Notification struct {
	Op      NotifyOp
	Channel string
}

// notificationOf reads the notification statement n is, or the
// pg_notify call c says it makes; nil for neither.
func notificationOf(n *pg_query.Node, c *Class) *Notification {
	switch {
	case n.GetListenStmt() != nil:
		return &Notification{Op: Listen, Channel: n.GetListenStmt().Conditionname}
	case n.GetUnlistenStmt() != nil:
		return &Notification{Op: Unlisten, Channel: n.GetUnlistenStmt().Conditionname}
	case n.GetNotifyStmt() != nil:
		return &Notification{Op: Notify, Channel: n.GetNotifyStmt().Conditionname}
	}
	for _, f := range c.funcNames {
		if f == "pg_notify" {
			return &Notification{Op: Notify}
		}
	}
	return nil
}
