//! BID and BIDCTL (in progress).
