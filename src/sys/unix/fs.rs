//! Owner-only files on POSIX: mode 0600 at creation.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;

pub fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    options.mode(0o600)
}
