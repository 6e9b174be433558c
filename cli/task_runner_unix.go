//go:build unix

package cli

import (
	"context"
	"os"
	"syscall"
)

// runnerSlots is how many slot descriptors a runner is handed with its
// task.
const runnerSlots = 2

// detached is how the task runner starts: a session of its own, so that
// neither the client's terminal nor its process group takes it down.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// beforeHandoff takes the runner slots of a task of clientID, which the
// runner is handed with the task (it holds its own copies as long as it
// lives); done closes this process's copies.
func (s *taskSpawner) beforeHandoff(ctx context.Context, clientID string) (held []*os.File, done func(), err error) {
	held, err = takeRunnerSlots(ctx, s.stateDir, clientID, s.maxWorking, s.maxRunners)
	if err != nil {
		return nil, nil, err
	}
	return held, func() {
		for _, f := range held {
			f.Close()
		}
	}, nil
}
