package sessions

import (
	"context"
	"encoding/json"
	"time"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSystem    = "system"
)

// Memory layers reported in [MemoryHit.Layer].
const (
	LayerSource  = "source"
	LayerTrusted = "trusted"
)

// Session is one conversation. Its messages form a tree; HeadID names the
// last message of the active branch ("" while the session has no messages).
type Session struct {
	ID        string
	AgentID   string
	Title     string
	Source    string
	CreatedAt time.Time
	UpdatedAt time.Time
	HeadID    string
	Archived  bool
}

// Message is one node of a session's message tree. ParentID is "" for a root.
type Message struct {
	ID        string
	SessionID string
	ParentID  string
	Role      string
	Content   string
	CreatedAt time.Time
	Metadata  json.RawMessage
}

// SessionUpdate names the fields UpdateSession changes; nil fields are left as they are.
type SessionUpdate struct {
	Title    *string
	Archived *bool
}

// NewMessage is a message to append. The store assigns its ID, session,
// parent and creation time.
type NewMessage struct {
	Role     string
	Content  string
	Metadata json.RawMessage
}

// Store is the persistent home of sessions, their message trees, turn
// leases, memory and audit records. Implementations are safe for concurrent
// use by many goroutines and, through the database, by many processes.
type Store interface {
	// CreateSession stores s. s.ID is required (caller-chosen); a zero
	// CreatedAt becomes now and a zero UpdatedAt becomes CreatedAt.
	// ErrExists if the ID is taken.
	CreateSession(ctx context.Context, s Session) (Session, error)
	// GetSession returns the session with id, or ErrNotFound.
	GetSession(ctx context.Context, id string) (Session, error)
	// ListSessions returns up to limit non-archived sessions, most recently
	// updated first (ties broken by id, descending).
	ListSessions(ctx context.Context, limit int) ([]Session, error)
	// UpdateSession applies u and returns the updated session, or ErrNotFound.
	UpdateSession(ctx context.Context, id string, u SessionUpdate) (Session, error)
	// DeleteSession deletes the session with its messages, lease and
	// standing approvals, or returns ErrNotFound. It exists to undo an orphan session on failure.
	DeleteSession(ctx context.Context, id string) error

	// AppendMessages appends msgs as a chain (msgs[0] under parentID, each next under the previous),
	// and when moveHead is true moves head_id to the last one and bumps updated_at, all in ONE transaction.
	// parentID "" means a root message. ErrNotFound if the session or parent does not exist.
	AppendMessages(ctx context.Context, sessionID, parentID string, msgs []NewMessage, moveHead bool) ([]Message, error)
	// GetMessage returns the message with id, or ErrNotFound.
	GetMessage(ctx context.Context, id string) (Message, error)
	// Branch returns the active branch: the chain from the session's head to
	// the root, returned root first. Empty when the session has no head.
	Branch(ctx context.Context, sessionID string) ([]Message, error)
	// BranchBefore reads a branch backwards, one page at a time: at most
	// limit messages of the chain that ends at beforeID's parent, or at the
	// session's head when beforeID is "", returned root first (the last
	// one is the newest). The next page passes the first message returned
	// as beforeID; the root is reached when a page's first message has no
	// parent (or the page is empty: the session has no head, or beforeID
	// is a root). Its cost follows limit, not the branch's length: one
	// key lookup per message. ErrNotFound if the session does not exist or
	// beforeID is not one of its messages; limit must be positive.
	BranchBefore(ctx context.Context, sessionID, beforeID string, limit int) ([]Message, error)
	// SetHead moves the session's head to messageID, which must belong to
	// the session (ErrNotFound otherwise). It bumps updated_at.
	SetHead(ctx context.Context, sessionID, messageID string) error

	// AcquireTurn takes the session's turn lease for owner until ttl from
	// now. ErrBusy when another owner holds an unexpired lease; an expired
	// lease is taken over; acquiring a lease owner already holds renews it.
	// Whatever error it returns, a cancelled ctx included, owner holds no
	// lease afterwards: an interrupted acquire never leaves one behind.
	AcquireTurn(ctx context.Context, sessionID, owner string, ttl time.Duration) error
	// RenewTurn extends owner's lease to ttl from now; ErrLeaseLost if owner
	// does not hold it (released, or expired and taken over).
	RenewTurn(ctx context.Context, sessionID, owner string, ttl time.Duration) error
	// ReleaseTurn drops owner's lease; a no-op if owner does not hold it.
	ReleaseTurn(ctx context.Context, sessionID, owner string) error

	// MemoryStatus counts sources and trusted pages and reports the current revision.
	MemoryStatus(ctx context.Context) (MemoryStatus, error)
	// AppendSource appends an immutable source. baseRevision<0: no check;
	// else ErrConflict if the path's revision is not baseRevision.
	AppendSource(ctx context.Context, src NewSource, baseRevision int64) (Source, error)
	// Promote copies a source's content to the trusted page at its path.
	// ErrNotFound for an unknown source; baseRevision as in AppendSource.
	Promote(ctx context.Context, sourceID int64, baseRevision int64) (TrustedPage, error)
	// SearchMemory runs a ranked full-text search over sources and trusted
	// pages whose path starts with pathPrefix, best first, at most topK hits.
	// query is plain words, never query syntax. Equal scores put trusted
	// pages before sources, then the lower source id first.
	SearchMemory(ctx context.Context, query string, topK int, pathPrefix string) ([]MemoryHit, error)
	// GrepMemory returns the lines containing substring, at most limit hits,
	// in path order (trusted layer before sources on the same path).
	GrepMemory(ctx context.Context, substring, pathPrefix string, caseSensitive bool, limit int) ([]MemoryHit, error)
	// GetMemory returns the trusted page and sources at path, or ErrNotFound.
	GetMemory(ctx context.Context, path string) (MemoryPage, error)
	// BrowseMemory lists the paths starting with prefix, in path order.
	BrowseMemory(ctx context.Context, prefix string) ([]MemoryEntry, error)

	// AllowForSession records the owner's standing approval of tool for
	// the rest of session sessionID ("allow for this session"), granted by
	// by. Recording it again is a no-op. ErrNotFound if the session does
	// not exist; an invalid tool name wraps [ErrInvalidAllowance]
	// ([CheckAllowance]). The approvals go with their session
	// (DeleteSession). Only the owner's speaker may read or write them:
	// the store does not know speakers, its caller does (cli/host).
	AllowForSession(ctx context.Context, sessionID, tool string, by SourceAuthority) error
	// SessionAllowances returns the tools allowed for session sessionID, in
	// name order (byte order): empty, not nil, when there are none or the
	// session does not exist.
	SessionAllowances(ctx context.Context, sessionID string) ([]string, error)

	// AppendAudit appends a record to the keyed chain. It fails with
	// ErrAuditKey when the store has no key, another key than the log's,
	// or an unkeyed log (see Options.AuditKey): never an unkeyed record.
	AppendAudit(ctx context.Context, r NewAuditRecord) (AuditRecord, error)
	// TailAudit returns the last n records, newest last.
	TailAudit(ctx context.Context, n int) ([]AuditRecord, error)
	// VerifyAudit walks the whole chain with the store's key and reports the
	// first bad record: edited, deleted, inserted, reordered, written
	// without the key, or cut off behind a head moved back. With anchor
	// non-nil it also requires the chain to still hold that record (a head
	// printed earlier), which catches truncation even by a key holder. It
	// fails with ErrAuditKey when the store has no key.
	VerifyAudit(ctx context.Context, anchor *AuditHead) (AuditReport, error)
	// CheckAuditAnchor returns the sealed chain head (its id and MAC) after
	// checking, in one snapshot, that the log still holds anchor when it is
	// not nil (the record with its id exists, carries its MAC, verifies
	// under the key, and the head is at or past it) and that the head
	// carries its seal. It reads the head and one record, whatever the
	// log's length. Errors wrap ErrAuditKey (no key, another key),
	// ErrAuditAnchor (the log does not extend anchor) or ErrAuditBroken
	// (the head fails its seal).
	CheckAuditAnchor(ctx context.Context, anchor *AuditHead) (AuditHead, error)
	// AuditKeys lists the writer keys the log holds, in id order (Revoked
	// from the revocation records the log holds).
	AuditKeys(ctx context.Context) ([]AuditKey, error)
	// RevokeAuditKey appends an audit.key.revoked record for key id to
	// this store's writer chain: appends signed with that key are refused
	// from then on, and VerifyAudit reports any record its writers append
	// after it. It needs a signing key ([Options.AuditSigner]) other than
	// the one revoked; an unknown id is ErrNotFound.
	RevokeAuditKey(ctx context.Context, id string) (AuditRecord, error)

	// Close releases the store's database handles.
	Close() error
}

// MemoryStatus summarises the memory store.
type MemoryStatus struct {
	Sources      int64
	TrustedPages int64
	Revision     int64
}

// NewSource is a memory source to append.
type NewSource struct {
	Path      string
	Content   string
	Authority SourceAuthority
}

// SourceAuthority records who wrote a source (the speaker's authority fields).
type SourceAuthority struct {
	SpeakerKind    string `json:"speaker_kind"`
	SpeakerID      string `json:"speaker_id"`
	SpeakerDisplay string `json:"speaker_display"`
	PrincipalID    string `json:"principal_id"`
	Tier           string `json:"authority_tier"`
	Interaction    string `json:"interaction"`
	Source         string `json:"source"`
}

// Source is an appended, immutable memory source.
type Source struct {
	ID        int64
	Path      string
	Content   string
	Authority SourceAuthority
	Revision  int64
	CreatedAt time.Time
}

// TrustedPage is the owner-promoted page at a path.
type TrustedPage struct {
	Path      string
	Content   string
	Revision  int64
	SourceID  int64
	UpdatedAt time.Time
}

// MemoryHit is one search or grep result.
type MemoryHit struct {
	Layer    string // LayerSource or LayerTrusted
	Path     string
	SourceID int64 // the source, or the source a trusted page was promoted from
	Snippet  string
	Score    float64 // higher is better (search); 0 for grep
	Line     int     // 1-based line number (grep); 0 for search
}

// MemoryPage is everything stored at one path.
type MemoryPage struct {
	Path     string
	Trusted  *TrustedPage
	Sources  []Source // oldest first
	Revision int64    // the path's revision, for optimistic concurrency
}

// MemoryEntry summarises one path for browsing.
type MemoryEntry struct {
	Path      string
	Sources   int64
	Trusted   bool
	Revision  int64
	UpdatedAt time.Time
}

// NewAuditRecord is an audit record to append.
type NewAuditRecord struct {
	Type      string
	Origin    string
	SessionID string
	Payload   json.RawMessage
}

// AuditRecord is a stored audit record. ID orders every record of the
// log (the database assigns it). A record of the shared chain (Writer "")
// has Hash, its MAC: an HMAC-SHA-256 under the audit key over PrevHash (the
// previous record's MAC) and the record's content. A record of a writer
// chain (one store opened to write with a signing key, see
// [Options.AuditSigner]) has Writer, its Seq in that chain (1, 2, ...),
// Hash, a SHA-256 over PrevHash and its content, and Sig, the writer's
// Ed25519 signature of Hash.
type AuditRecord struct {
	ID        int64
	TS        time.Time
	Type      string
	Origin    string
	SessionID string
	Payload   json.RawMessage
	PrevHash  string
	Hash      string
	Writer    string
	Seq       int64
	Sig       string
}

// AuditKey is a writer's public key as the store records it.
type AuditKey struct {
	// ID is the key's id: 32 hex digits of the SHA-256 of the key.
	ID string
	// PublicKey is the Ed25519 public key, unpadded base64url.
	PublicKey string
	// Label says whose key it is (the host name when it was added).
	Label string
	// Added is when a writer first used it.
	Added time.Time
	// Revoked: an audit.key.revoked record names it.
	Revoked bool
	// Pinned: the verifier had pinned it before (see [Options.AuditPins]);
	// a key seen for the first time is not.
	Pinned bool
	// Records is how many records its writers hold (VerifyAudit only).
	Records int64
}

// AuditHead names a record of the chain by its id and MAC, the form
// `openprogram audit head` prints and `audit verify --head` takes.
type AuditHead struct {
	ID  int64
	MAC string
}

// AuditReport is the outcome of VerifyAudit. When OK is false, FirstBadID
// names the first record found inconsistent and Problem says how.
type AuditReport struct {
	Records    int64
	OK         bool
	FirstBadID int64
	Problem    string
	// Writers is how many writer chains were verified.
	Writers int64
	// Keys are the writer keys the log holds, in id order.
	Keys []AuditKey
	// Notes say what was not checked and why (the shared chain's MACs
	// without its key).
	Notes []string
}
