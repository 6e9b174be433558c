package clients

import "bytes"

var (
	crlf = []byte("\r\n")
	lf   = []byte("\n")
)

// isCRLF reports whether data ends its lines with CRLF (as files saved by
// Windows editors do): every newline follows a carriage return, and there
// is at least one. A file with mixed endings is not: it is merged as it is,
// and what is added ends its lines with LF.
func isCRLF(data []byte) bool {
	n := bytes.Count(data, lf)
	return n > 0 && bytes.Count(data, crlf) == n
}

// toLF turns a CRLF file into LF for merging (the merges and the diff work
// on LF lines); other data is returned as it is.
func toLF(data []byte, crlfFile bool) []byte {
	if !crlfFile {
		return data
	}
	return bytes.ReplaceAll(data, crlf, lf)
}

// withEOL gives merged LF data back the line endings of the file it came
// from: CRLF for a CRLF file, else as it is.
func withEOL(data []byte, crlfFile bool) []byte {
	if !crlfFile || data == nil {
		return data
	}
	return bytes.ReplaceAll(data, lf, crlf)
}
