//! `RNDADDENTROPY`: bytes into the kernel's input pool, crediting entropy. The crate's one
//! unsafe block: the ioctl takes a pointer to a C struct with a flexible array member, which
//! no safe wrapper we use offers.
//!
//! From `<linux/random.h>`:
//!
//! ```c
//! struct rand_pool_info { int entropy_count; int buf_size; __u32 buf[0]; };
//! #define RNDADDENTROPY _IOW('R', 0x03, int[2])   /* 0x40085203 */
//! ```
//!
//! `entropy_count` is in bits, `buf_size` in bytes. The kernel mixes the bytes in whatever the
//! credit, and refuses callers without `CAP_SYS_ADMIN` (EPERM), a negative count (EINVAL) or a
//! count above `buf_size * 8`, which it caps.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `_IOW('R', 0x03, int[2])`: direction write (1 << 30), size 8 (<< 16), type 'R' (<< 8), nr 3.
pub const RNDADDENTROPY: u64 = (1 << 30) | (8 << 16) | ((b'R' as u64) << 8) | 0x03;

/// Largest write we make: the config's `feed_bytes` bound.
pub const MAX_FEED_BYTES: usize = 4096;

/// `struct rand_pool_info` followed by its buffer, laid out as the kernel reads it: two `int`s,
/// then the bytes (the `__u32` array's storage, 4-byte aligned by `repr(C)`).
#[repr(C)]
struct RandPoolInfo {
    entropy_count: libc::c_int,
    buf_size: libc::c_int,
    buf: [u8; MAX_FEED_BYTES],
}

impl Drop for RandPoolInfo {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.buf);
    }
}

/// Adds `bytes` (at most [`MAX_FEED_BYTES`]) to the kernel's pool through `fd` (the random
/// device), crediting `credit_bits` (at most 8 per byte). EPERM says that the call needs
/// `CAP_SYS_ADMIN`; other errors name the ioctl.
pub fn add_entropy(fd: BorrowedFd<'_>, bytes: &[u8], credit_bits: u32) -> io::Result<()> {
    if bytes.len() > MAX_FEED_BYTES || u64::from(credit_bits) > bytes.len() as u64 * 8 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "RNDADDENTROPY: {} bytes crediting {credit_bits} bits (at most {MAX_FEED_BYTES} \
                 bytes, 8 bits per byte)",
                bytes.len()
            ),
        ));
    }
    let mut info = Box::new(RandPoolInfo {
        // Both fit an int: checked above (4096 bytes, 32768 bits).
        entropy_count: credit_bits as libc::c_int,
        buf_size: bytes.len() as libc::c_int,
        buf: [0; MAX_FEED_BYTES],
    });
    info.buf[..bytes.len()].copy_from_slice(bytes);
    let request = RNDADDENTROPY as libc::Ioctl;
    #[allow(unsafe_code)]
    // SAFETY: `info` is a live, exclusively borrowed `rand_pool_info` whose buffer holds at
    // least `buf_size` initialised bytes; the kernel only reads `8 + buf_size` bytes from the
    // pointer during the call and keeps no reference to it. `fd` is a borrowed, open
    // descriptor for the duration of the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request, &mut *info as *mut RandPoolInfo) };
    if rc == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    Err(match error.raw_os_error() {
        Some(libc::EPERM) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            "RNDADDENTROPY refused (EPERM): feeding the kernel's RNG needs CAP_SYS_ADMIN",
        ),
        _ => io::Error::new(error.kind(), format!("RNDADDENTROPY failed: {error}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_number_is_the_kernels() {
        assert_eq!(RNDADDENTROPY, 0x4008_5203);
        assert_eq!(std::mem::offset_of!(RandPoolInfo, buf), 8);
    }

    #[test]
    fn credits_beyond_eight_bits_a_byte_and_oversized_writes_are_refused_before_the_call() {
        let file = std::fs::File::open("/dev/null").expect("open /dev/null");
        let fd = std::os::fd::AsFd::as_fd(&file);
        let e = add_entropy(fd, &[0; 4], 33).expect_err("33 bits for 4 bytes");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = add_entropy(fd, &[0; MAX_FEED_BYTES + 1], 0).expect_err("too long");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        // /dev/null is no random device: the kernel answers ENOTTY, and the error names the call.
        let e = add_entropy(fd, &[0; 4], 0).expect_err("not a random device");
        assert!(e.to_string().contains("RNDADDENTROPY"), "{e}");
    }
}
