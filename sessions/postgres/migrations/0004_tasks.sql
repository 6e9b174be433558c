-- Version 4: durable tasks (sessions.TaskStore). One row per task, the
-- commit point between the process that serves the client and the runner
-- that runs the turn: CancelTask and CommitTask are conditional updates
-- of the row, which the row lock orders across connections and processes.
-- Times are judged by the database clock (now()); ttl is in microseconds
-- and expires_at = created_at + ttl, kept so that the sweeps use an index.
-- runner is '' (and runner_expires_at NULL) until a runner claims the task.
-- The JSON documents are text, kept byte for byte.
CREATE TABLE tasks (
    id                text COLLATE "C" PRIMARY KEY,
    client_id         text COLLATE "C" NOT NULL,
    status            text NOT NULL,
    status_message    text NOT NULL DEFAULT '',
    request           text NOT NULL,
    result            text,
    progress          text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    ttl               bigint NOT NULL,
    expires_at        timestamptz NOT NULL,
    committing        boolean NOT NULL DEFAULT false,
    runner            text NOT NULL DEFAULT '',
    runner_expires_at timestamptz,
    CONSTRAINT tasks_status_check CHECK (status IN ('working', 'completed', 'failed', 'cancelled')),
    CONSTRAINT tasks_ttl_check CHECK (ttl > 0),
    CONSTRAINT tasks_committing_check CHECK (NOT committing OR runner <> '')
);

-- ListTasks: a client's tasks in (created_at, id) order.
CREATE INDEX tasks_client_idx ON tasks (client_id, created_at, id);
-- CreateTask's cap and FailAbandonedTasks: the working tasks only.
CREATE INDEX tasks_working_idx ON tasks (client_id) WHERE status = 'working';
CREATE INDEX tasks_lapsed_idx ON tasks (runner_expires_at, created_at) WHERE status = 'working';
-- PurgeExpiredTasks: terminal tasks by expiry.
CREATE INDEX tasks_expired_idx ON tasks (expires_at) WHERE status <> 'working';
