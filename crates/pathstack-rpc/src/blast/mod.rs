//! BLAST (in progress).
