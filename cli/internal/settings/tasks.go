package settings

import (
	"fmt"
	"time"

	"github.com/openprogram/openprogram/mcpserver"
)

// maxTasksWorking bounds mcp_server.tasks.max_working: every working task
// is a runner process.
const maxTasksWorking = 64

// maxTaskRunners bounds mcp_server.tasks.max_runners: each runner is a
// process of some 30 MiB.
const maxTaskRunners = 256

// Bounds of mcp_server.tasks.default_ttl and max_ttl: what the MCP server
// keeps a task for at least, and the longest a task may be kept.
const (
	minTaskTTL = mcpserver.MinTaskTTL
	maxTaskTTL = 24 * time.Hour
)

func parseBool(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("want true or false, got %s", jsonKind(v))
	}
	return b, nil
}

func parseTasksWorking(v any) (int, error) {
	if v == nil {
		return 0, fmt.Errorf("want a whole number from 1 to %d, got null", maxTasksWorking)
	}
	return parseInt(1, maxTasksWorking)(v)
}

func parseTasksRunners(v any) (int, error) {
	if v == nil {
		return 0, fmt.Errorf("want a whole number from 1 to %d, got null", maxTaskRunners)
	}
	return parseInt(1, maxTaskRunners)(v)
}

func parseTaskTTL(v any) (time.Duration, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf(`want a duration such as "1h" or "30m", got %s`, jsonKind(v))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < minTaskTTL || d > maxTaskTTL {
		return 0, fmt.Errorf(`%q is not a duration from %s to %s such as "1h" or "30m"`, s, minTaskTTL, maxTaskTTL)
	}
	return d, nil
}

// checkAcrossKeys checks the rules that join several keys, on load and
// before config set or unset writes: a task default ttl above the maximum
// is an error naming both keys.
func (c *Config) checkAcrossKeys() error {
	t := c.MCPServer.Tasks
	if t.DefaultTTL > t.MaxTTL {
		return fmt.Errorf("mcp_server.tasks.default_ttl (%s) is above mcp_server.tasks.max_ttl (%s): lower the one or raise the other",
			t.DefaultTTL, t.MaxTTL)
	}
	return nil
}
