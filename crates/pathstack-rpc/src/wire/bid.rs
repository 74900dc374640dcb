//! (written by the bid work in progress)
