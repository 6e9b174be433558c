package cli

import (
	"fmt"
	"time"

	"github.com/openprogram/openprogram/cli/host"
)

// maxTasksWorking bounds mcp_server.tasks.max_working: every working task
// is a runner process.
const maxTasksWorking = 64

// Bounds of mcp_server.tasks.default_ttl and max_ttl.
const (
	minTaskTTL = time.Second
	maxTaskTTL = 24 * time.Hour
)

func validateBool(v any) error {
	if _, ok := v.(bool); !ok {
		return fmt.Errorf("want true or false, got %s", jsonKind(v))
	}
	return nil
}

func validateTasksWorking(v any) error {
	if v == nil {
		return fmt.Errorf("want a whole number from 1 to %d, got null", maxTasksWorking)
	}
	return validateInt(1, maxTasksWorking)(v)
}

func validateTaskTTL(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf(`want a duration such as "1h" or "30m", got %s`, jsonKind(v))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < minTaskTTL || d > maxTaskTTL {
		return fmt.Errorf(`%q is not a duration from %s to %s such as "1h" or "30m"`, s, minTaskTTL, maxTaskTTL)
	}
	return nil
}

// boolean returns a boolean setting (its default when unset).
func (c *Config) boolean(key string) bool {
	v, _, _ := c.Get(key)
	b, _ := v.(bool)
	return b
}

// tasksConfig is the mcp_server.tasks.* settings, typed; a default ttl above
// the maximum is an error naming both keys.
func tasksConfig(cfg *Config) (host.TasksConfig, error) {
	tc := host.TasksConfig{
		Enabled:    cfg.boolean("mcp_server.tasks.enabled"),
		MaxWorking: cfg.integer("mcp_server.tasks.max_working"),
		DefaultTTL: cfg.duration("mcp_server.tasks.default_ttl"),
		MaxTTL:     cfg.duration("mcp_server.tasks.max_ttl"),
	}
	if tc.DefaultTTL > tc.MaxTTL {
		return host.TasksConfig{}, fmt.Errorf("mcp_server.tasks.default_ttl (%s) is above mcp_server.tasks.max_ttl (%s): lower the one or raise the other",
			tc.DefaultTTL, tc.MaxTTL)
	}
	return tc, nil
}

// checkTaskSettings refuses task settings that contradict each other
// (`config set` runs it before saving).
func checkTaskSettings(cfg *Config) error {
	_, err := tasksConfig(cfg)
	return err
}
