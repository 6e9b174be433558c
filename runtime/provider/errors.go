package provider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Class says what kind of failure a provider error is, and so whether
// retrying can help.
type Class string

// Error classes. Only [ClassRateLimit], [ClassServer] and [ClassNetwork]
// are retried by [WithRetry].
const (
	// ClassAuth: the key is missing, wrong or lacks permission, or the
	// account cannot pay (quota, billing). Fix the configuration.
	ClassAuth Class = "auth"
	// ClassRateLimit: too many requests; Error.RetryAfter says how long the
	// server asked to wait, when it said.
	ClassRateLimit Class = "rate_limit"
	// ClassContextLength: the conversation does not fit the model's context
	// window. Start a new session or pick a model with a larger window.
	ClassContextLength Class = "context_length"
	// ClassServer: the provider failed or is overloaded (5xx, 529, 408).
	ClassServer Class = "server"
	// ClassNetwork: the endpoint could not be reached or the connection broke.
	ClassNetwork Class = "network"
	// ClassInvalidRequest: the provider rejected the request (unknown model,
	// malformed input, a reply it could not parse).
	ClassInvalidRequest Class = "invalid_request"
	// ClassTimeout: the server stayed silent longer than model.timeout, or
	// the turn ran past model.turn_timeout. Not retried: a stalled server
	// rarely recovers within the same turn.
	ClassTimeout Class = "timeout"
	// ClassCancelled: the caller's context ended.
	ClassCancelled Class = "cancelled"
)

// Retryable reports whether retrying a request that failed with c can help.
func (c Class) Retryable() bool {
	return c == ClassRateLimit || c == ClassServer || c == ClassNetwork
}

// ErrUnencryptedKey is what errors.Is finds in the error of a provider's
// constructor for an endpoint that would send a secret (the API key, or
// any of Settings.Headers, which may carry credentials) over plain http://
// to a host that is not literally this machine, unless
// Settings.AllowUnencryptedKey says the owner accepts that; the error's text
// says why and how. A request redirected there is refused with an [*Error]
// of class [ClassInvalidRequest] that matches it too.
var ErrUnencryptedKey = errors.New("a secret over plain http to a host that is not this machine")

// Error is a classified provider failure. Err is the cause; it never holds
// an API key.
type Error struct {
	Class      Class
	RetryAfter time.Duration // server-requested wait, 0 when none was given
	Status     int           // HTTP status, 0 when there was no response
	Err        error
}

func (e *Error) Error() string {
	var what string
	switch e.Class {
	case ClassAuth:
		what = "authentication or account problem (check the API key and the account's quota)"
	case ClassRateLimit:
		what = "rate limited"
		if e.RetryAfter > 0 {
			what += fmt.Sprintf(" (retry after %s)", e.RetryAfter.Round(time.Millisecond))
		}
	case ClassContextLength:
		what = "conversation too long for the model's context window (start a new session)"
	case ClassServer:
		what = "server error"
	case ClassNetwork:
		what = "endpoint unreachable or connection broken (check model.base_url)"
	case ClassInvalidRequest:
		what = "request rejected (check model.name and model.base_url)"
	case ClassTimeout:
		what = "timed out"
	case ClassCancelled:
		what = "call cancelled"
	default:
		what = "failure"
	}
	msg := "model provider " + what
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause, so errors.Is(err, context.Canceled) holds for a
// cancelled call.
func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err: the Class of the [*Error] in its chain,
// [ClassCancelled] for a context error, and [ClassServer] otherwise (an
// unclassified failure inside a provider). It returns "" for a nil err.
func ClassOf(err error) Class {
	if err == nil {
		return ""
	}
	if pe, ok := errors.AsType[*Error](err); ok {
		return pe.Class
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ClassCancelled
	}
	return ClassServer
}

// Cancelled returns the [ClassCancelled] error for ctx, which has ended; when
// ctx ended with an [*Error] as its cause (a timeout), it returns that error.
func Cancelled(ctx context.Context) *Error {
	if pe, ok := errors.AsType[*Error](context.Cause(ctx)); ok {
		return pe
	}
	err := ctx.Err()
	if err == nil {
		err = context.Canceled
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	return &Error{Class: ClassCancelled, Err: err}
}
