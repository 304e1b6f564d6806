package recall

import (
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"
)

// ValidateMetadata checks a whole metadata map against the limits: at most
// MaxMetadataPairs pairs, keys of 1 to MaxMetadataKeyLen bytes, values up
// to MaxMetadataValueLen bytes, all valid UTF-8 without NUL bytes. The
// error wraps ErrInvalidMetadata.
func ValidateMetadata(md map[string]string) error {
	if len(md) > MaxMetadataPairs {
		return fmt.Errorf("%w: %d pairs, at most %d are allowed", ErrInvalidMetadata, len(md), MaxMetadataPairs)
	}
	for k, v := range md {
		if err := validatePair(k, &v); err != nil {
			return err
		}
	}
	return nil
}

func validatePair(k string, v *string) error {
	switch {
	case k == "":
		return fmt.Errorf("%w: empty key", ErrInvalidMetadata)
	case len(k) > MaxMetadataKeyLen:
		return fmt.Errorf("%w: key %.20q... is %d bytes, at most %d are allowed", ErrInvalidMetadata, k, len(k), MaxMetadataKeyLen)
	case !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0:
		return fmt.Errorf("%w: key %q is not valid UTF-8 text", ErrInvalidMetadata, k)
	case v == nil:
		return nil
	case len(*v) > MaxMetadataValueLen:
		return fmt.Errorf("%w: value of %q is %d bytes, at most %d are allowed", ErrInvalidMetadata, k, len(*v), MaxMetadataValueLen)
	case !utf8.ValidString(*v) || strings.IndexByte(*v, 0) >= 0:
		return fmt.Errorf("%w: value of %q is not valid UTF-8 text", ErrInvalidMetadata, k)
	}
	return nil
}

// validateMetadataChange checks the pairs of one change. Whether the
// merged map stays within MaxMetadataPairs depends on the session; the
// helpers that write changes check it (ChangeMeta).
func validateMetadataChange(c MetaChange) error {
	if len(c.Metadata) > MaxMetadataPairs {
		return fmt.Errorf("%w: %d pairs, at most %d are allowed", ErrInvalidMetadata, len(c.Metadata), MaxMetadataPairs)
	}
	for k, v := range c.Metadata {
		if err := validatePair(k, v); err != nil {
			return err
		}
	}
	return nil
}

// mergeMetadata applies a change to md and returns the result; md is not
// modified. An empty result is nil.
func mergeMetadata(md map[string]string, c MetaChange) map[string]string {
	var out map[string]string
	if !c.ClearMetadata && len(md) > 0 {
		out = maps.Clone(md)
	}
	for k, v := range c.Metadata {
		if v == nil {
			delete(out, k)
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = *v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
