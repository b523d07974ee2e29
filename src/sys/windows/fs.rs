//! Owner-only files on Windows: the file's DACL replaced by one entry, full control for the
//! user this process runs as, and protected (nothing inherited from the directory). The
//! file's owner and administrators (who may take ownership) can still change it, as root can
//! on POSIX.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::Path;
use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, GENERIC_WRITE, HANDLE};
use windows_sys::Win32::Security::Authorization::{SetSecurityInfo, SE_FILE_OBJECT};
use windows_sys::Win32::Security::{
    AddAccessAllowedAce, GetLengthSid, GetTokenInformation, InitializeAcl, TokenUser, ACL,
    ACL_REVISION, DACL_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION, TOKEN_QUERY,
    TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{FILE_ALL_ACCESS, READ_CONTROL, WRITE_DAC};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// Opens `path`; a file it opens gets the owner-only DACL. A file that exists and whose DACL we
/// may not change (another user's) is opened as it is, keeping its own, as on POSIX.
pub fn open_owner_only(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let plain = options.clone();
    options.access_mode(GENERIC_WRITE | WRITE_DAC | READ_CONTROL);
    let f = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) && path.exists() => {
            return plain.open(path);
        }
        Err(e) => return Err(e),
    };
    restrict(&f)?;
    Ok(f)
}

/// The SID of the user this process runs as, in a buffer that holds the TOKEN_USER.
fn token_user() -> io::Result<Vec<u64>> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: our own process's token, for query; the out-pointer is a local.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just opened and owned by nobody else.
    let token = unsafe { OwnedHandle::from_raw_handle(token as RawHandle) };
    let mut len = 0u32;
    // SAFETY: asks only for the size (no buffer).
    unsafe {
        GetTokenInformation(
            token.as_raw_handle() as HANDLE,
            TokenUser,
            std::ptr::null_mut(),
            0,
            &mut len,
        )
    };
    // u64s: aligned for TOKEN_USER.
    let mut buf = vec![0u64; (len as usize).div_ceil(8).max(1)];
    // SAFETY: `buf` has room for `len` bytes.
    if unsafe {
        GetTokenInformation(
            token.as_raw_handle() as HANDLE,
            TokenUser,
            buf.as_mut_ptr().cast(),
            (buf.len() * 8) as u32,
            &mut len,
        )
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(buf)
}

/// Replaces `f`'s DACL by one allowing the current user everything, protected from
/// inheritance.
fn restrict(f: &File) -> io::Result<()> {
    let user = token_user()?;
    // SAFETY: `user` holds a TOKEN_USER that GetTokenInformation filled; its SID points into
    // the same buffer, which lives until the end of this function.
    let sid = unsafe { (*user.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    // SAFETY: a valid SID.
    let sid_len = unsafe { GetLengthSid(sid) } as usize;
    // ACL header + ACCESS_ALLOWED_ACE (header 4 + mask 4, then the SID), rounded to u32s.
    let acl_len = (std::mem::size_of::<ACL>() + 8 + sid_len).next_multiple_of(4);
    let mut acl = vec![0u32; acl_len / 4];
    let acl_ptr = acl.as_mut_ptr().cast::<ACL>();
    // SAFETY: `acl` is `acl_len` bytes, DWORD-aligned, as InitializeAcl requires; the ACE fits
    // in it (its size counted above).
    let ok = unsafe {
        InitializeAcl(acl_ptr, acl_len as u32, ACL_REVISION) != 0
            && AddAccessAllowedAce(acl_ptr, ACL_REVISION, FILE_ALL_ACCESS, sid) != 0
    };
    if !ok {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: an open file handle with WRITE_DAC, and the ACL built above.
    let r = unsafe {
        SetSecurityInfo(
            f.as_raw_handle() as HANDLE,
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            acl_ptr,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r as i32));
    }
    Ok(())
}

/// Whether `path`'s DACL is the one [`open_owner_only`] sets: protected, one entry, allowing
/// the current user (for tests). `Unsupported` under Wine, which keeps a file's security
/// descriptor only in extended attributes and otherwise reports one made up from the POSIX
/// mode (seen with Wine 8 here: three entries, not protected).
#[cfg(test)]
pub fn is_owner_only(path: &Path) -> io::Result<bool> {
    if under_wine() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "Wine does not keep a file's DACL here",
        ));
    }
    use windows_sys::Win32::Foundation::LocalFree;
    use windows_sys::Win32::Security::Authorization::GetSecurityInfo;
    use windows_sys::Win32::Security::{
        EqualSid, GetAce, GetSecurityDescriptorControl, ACCESS_ALLOWED_ACE, PSECURITY_DESCRIPTOR,
        SE_DACL_PROTECTED,
    };
    let f = OpenOptions::new()
        .read(true)
        .access_mode(READ_CONTROL)
        .open(path)?;
    let user = token_user()?;
    // SAFETY: as in `restrict`.
    let sid = unsafe { (*user.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: an open handle with READ_CONTROL; out-pointers to locals; `sd` is freed below.
    let r = unsafe {
        GetSecurityInfo(
            f.as_raw_handle() as HANDLE,
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut sd,
        )
    };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r as i32));
    }
    // SAFETY: `sd` and `dacl` (inside it) are valid until the LocalFree; the ACE pointer is the
    // ACL's first entry, an ACCESS_ALLOWED_ACE as AddAccessAllowedAce wrote it (checked by type).
    let ok = unsafe {
        let mut control = 0u16;
        let mut revision = 0u32;
        let protected = GetSecurityDescriptorControl(sd, &mut control, &mut revision) != 0
            && control & SE_DACL_PROTECTED != 0;
        let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
        let one = !dacl.is_null() && (*dacl).AceCount == 1 && GetAce(dacl, 0, &mut ace) != 0;
        let ours = one && {
            let ace = ace.cast::<ACCESS_ALLOWED_ACE>();
            (*ace).Header.AceType == 0 // ACCESS_ALLOWED_ACE_TYPE
                && EqualSid(std::ptr::addr_of!((*ace).SidStart).cast_mut().cast(), sid) != 0
        };
        LocalFree(sd);
        protected && ours
    };
    Ok(ok)
}

/// Whether this process runs under Wine (its ntdll exports `wine_get_version`).
#[cfg(test)]
fn under_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    let ntdll = super::wide("ntdll.dll".as_ref());
    // SAFETY: a NUL-terminated name; ntdll is loaded in every process; the lookup only reads.
    unsafe {
        let m = GetModuleHandleW(ntdll.as_ptr());
        !m.is_null() && GetProcAddress(m, c"wine_get_version".as_ptr().cast()).is_some()
    }
}
