//! Files only their owner may read (contract §8: `auth.store` holds refresh tokens and keys).

use std::fs::OpenOptions;

/// `options` made to create the file readable and writable by its owner only (mode 0600 on
/// POSIX). The mode applies when the file is created; an existing file keeps its own.
pub fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    super::imp::fs::owner_only(options)
}
