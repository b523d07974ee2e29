//! Files only their owner may read (contract §8: `auth.store` holds refresh tokens and keys).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Opens `path` with `options` so that a file it creates is readable and writable by its
/// owner only: mode 0600 on POSIX, applied when the file is created (an existing file keeps
/// its own); on Windows a DACL of one entry for the current user, protected from inheritance,
/// set on the file it opens (a file another user made keeps its own). Windows cannot take it
/// through `OpenOptions` alone, hence a function that opens (docs/windows.md).
pub fn open_owner_only(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    super::imp::fs::open_owner_only(options, path)
}

/// Whether `path` is readable and writable by its owner only, as [`open_owner_only`] leaves a
/// file it creates (for tests).
#[cfg(test)]
pub fn is_owner_only(path: &Path) -> io::Result<bool> {
    super::imp::fs::is_owner_only(path)
}
