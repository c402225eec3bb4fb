//! The process around a run: what the command line does about its limits and signals
//! (docs/hardening.md, docs/scenario.md, "The command line").
//!
//! - **Memory that runs out** ([`GuardedAlloc`]): the binary's allocator ends the process
//!   with a message and status 2 where Rust's default would abort (status 134, `memory
//!   allocation of N bytes failed`). The estimates refuse what they can foresee before
//!   anything runs; this is the floor under everything they cannot (a 110 MB shard given
//!   to `merge`, a comment of 16 MB in a scenario) under `ulimit -v`.
//! - **Signals that end it** ([`end_on_signals`]): SIGTERM, SIGHUP, SIGINT where nothing
//!   else handles it, and SIGXCPU (`ulimit -t`) remove the temporary file being written
//!   ([`hold_temp`]) before the process ends, so that nothing is left beside the target.
//! - **Writes past `ulimit -f`** ([`ignore_file_size_signal`]) fail as any other write.
//! - **Threads** ([`spawn`], [`room_for_threads`]) start only where their stacks fit.
//! - **Allocator arenas** ([`one_allocator_arena`]) under an address-space limit.
//!
//! The library loaded into another process (the Python module) uses none of it but
//! [`hold_temp`], which costs nothing there.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::{CString, c_char};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

thread_local! {
    /// Set while this thread asks for memory it can do without ([`fallible`]).
    static FALLIBLE: Cell<bool> = const { Cell::new(false) };
}

/// Run `f`, whose allocations may fail and be handled (`Vec::try_reserve`), rather than
/// ending the process under [`GuardedAlloc`].
pub fn fallible<T>(f: impl FnOnce() -> T) -> T {
    /// Puts the thread's flag back however `f` ends, a panic included: a flag left set
    /// would let every later failed allocation of the thread through as a null.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            FALLIBLE.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FALLIBLE.with(|c| c.replace(true)));
    f()
}

/// The system allocator, but an allocation that fails outside [`fallible`] ends the
/// process at once with a message saying so and status 2 (see [`out_of_memory`]), not
/// with an abort. The command line's global allocator.
pub struct GuardedAlloc;

impl GuardedAlloc {
    #[inline]
    fn checked(p: *mut u8, size: usize) -> *mut u8 {
        if p.is_null() && !FALLIBLE.try_with(Cell::get).unwrap_or(false) {
            out_of_memory(size);
        }
        p
    }
}

// SAFETY: every call is passed to the system allocator unchanged; only a null result is
// looked at, and then the process ends or the null is returned as it came.
unsafe impl GlobalAlloc for GuardedAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        Self::checked(unsafe { System.alloc(layout) }, layout.size())
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        Self::checked(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        Self::checked(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
}

/// A message built without allocating (there may be no memory left for one).
struct Buf {
    bytes: [u8; 768],
    len: usize,
}

impl std::fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Set by the first thread to run out of memory: another that does too meanwhile waits
/// for the end rather than print a second message.
static ENDING: AtomicBool = AtomicBool::new(false);

/// Say that `size` bytes could not be had, with the address-space limit if one is set,
/// remove the temporary file being written and end the process with status 2. Allocates
/// nothing.
pub fn out_of_memory(size: usize) -> ! {
    use std::fmt::Write;
    if ENDING.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    remove_temp();
    let mut b = Buf { bytes: [0; 768], len: 0 };
    let _ = write!(b, "error: out of memory: {size} bytes more could not be had, ");
    match address_space_limit() {
        Some(kb) => {
            let _ = write!(b, "past this process's address-space limit of {kb} KB (`ulimit -v`); raise it, or ");
        }
        None => {
            let _ = write!(b, "the machine's memory and swap are taken; ");
        }
    }
    let _ = b.write_str(
        "ask for less: fewer points (a run's --ranks, --sizes, --algorithms, --shard), data.mode: off, or \
         smaller input files. Nothing more was written.\n",
    );
    // SAFETY: write and _exit are async-signal-safe and take plain memory; the buffer
    // lives on this stack.
    unsafe {
        libc::write(2, b.bytes.as_ptr().cast(), b.len);
        libc::_exit(2);
    }
}

/// The process's address-space limit (`ulimit -v`) in KB, if one is set.
pub fn address_space_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur / 1024)
}

/// The temporary file being written ([`crate::files::replace_through_temp`]), as a C
/// string leaked for the signal handler to read, or null.
static TEMP: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());

/// Note `path` as the temporary file being written, to remove if the process is ended
/// before it is renamed into place, until the returned guard is dropped (once the file is
/// renamed or removed, or the write is abandoned, a panic included). One at a time: files
/// are written one after another.
#[must_use = "the file is held only while the guard lives"]
pub fn hold_temp(path: &std::path::Path) -> HeldTemp {
    use std::os::unix::ffi::OsStrExt;
    set_temp(CString::new(path.as_os_str().as_bytes()).ok().map_or(std::ptr::null_mut(), CString::into_raw));
    HeldTemp(())
}

/// The temporary file [`hold_temp`] noted, forgotten when this is dropped.
pub struct HeldTemp(());

impl Drop for HeldTemp {
    fn drop(&mut self) {
        set_temp(std::ptr::null_mut());
    }
}

/// Make `new` (from `CString::into_raw`, or null) the file a signal removes.
fn set_temp(new: *mut c_char) {
    let old = TEMP.swap(new, Ordering::SeqCst);
    if !old.is_null() {
        // SAFETY: `old` came from CString::into_raw above and is no longer shared: a
        // handler that loaded it before the swap may still unlink through it, and a
        // handler ends the process, so the free below never races a live read but in a
        // process that is ending anyway.
        drop(unsafe { CString::from_raw(old) });
    }
}

/// Remove the temporary file being written, if any. Async-signal-safe.
pub fn remove_temp() {
    let p = TEMP.load(Ordering::SeqCst);
    if !p.is_null() {
        // SAFETY: `p` is a NUL-terminated string from `hold_temp`; unlink is
        // async-signal-safe.
        unsafe {
            libc::unlink(p);
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    remove_temp();
    if sig == libc::SIGXCPU {
        let msg = b"error: the CPU time limit (`ulimit -t`) ran out; raise it, or ask for less: fewer points (a \
                    run's --ranks, --sizes, --algorithms, --shard) or smaller inputs. Nothing more was written.\n";
        // SAFETY: write is async-signal-safe; the message is static.
        unsafe {
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(2);
        }
    }
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(128 + sig) }
}

/// Whether signal `sig` is set to be ignored (by the caller: `nohup`, `trap '' INT`).
pub fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// What a refusal says when [`reservable`] said no: the kernel's limits a user can
/// change.
pub const CANNOT_RESERVE: &str = "more than this process can reserve (the kernel would not map that much: the \
                                  machine's memory and swap, or `ulimit -v`)";

/// Whether `bytes` of memory can be had at once: mapped as the allocator maps a large
/// block (private, anonymous, writable), untouched (no page is used) and unmapped at
/// once. Linux refuses past the machine's memory and swap or the process's `ulimit -v`,
/// unless the kernel overcommits always.
///
/// The kernel is asked directly, not the allocator: freeing a block the allocator had
/// mapped raises glibc's threshold for mapping blocks of their own, so the next smaller
/// probe (the pool's 6 MiB after the work thread's 9 MiB) came from its heap, which it
/// never gave back, and took the room it was checking for: the thread that then started
/// found no room for its signal stack and aborted the process (status 134).
pub fn reservable(bytes: u64) -> bool {
    let Ok(n) = usize::try_from(bytes) else {
        return false;
    };
    if n == 0 {
        return true;
    }
    // SAFETY: a fresh anonymous mapping of our own, never read or written, unmapped at
    // once with the length it was made with.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            n,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(p, n);
    }
    true
}

/// What a thread takes beside its stack: the signal stack the standard library maps
/// for it (whose failure it cannot report: it aborts), guard pages, thread-local
/// storage; with room to spare.
const THREAD_EXTRA_BYTES: u64 = 1 << 20;

/// Whether `n` threads of `stack` bytes each can start: their address space is asked for
/// first and given back ([`reservable`]). A thread whose stack is mapped but whose signal
/// stack then is not aborted the process (`failed to allocate an alternative stack`)
/// under a `ulimit -v` 20 KB above what the stack alone needed.
pub fn room_for_threads(n: usize, stack: usize) -> bool {
    reservable((n as u64).saturating_mul(stack as u64 + THREAD_EXTRA_BYTES))
}

/// Start thread `name` with a stack of `stack` bytes, once [`room_for_threads`] says it
/// can start whole (an `OutOfMemory` error otherwise, as the spawn's own would be).
pub fn spawn<T: Send + 'static>(
    name: &str,
    stack: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    if !room_for_threads(1, stack) {
        return Err(std::io::ErrorKind::OutOfMemory.into());
    }
    std::thread::Builder::new().name(name.into()).stack_size(stack).spawn(f)
}

/// The stack a thread started without a size gets: RUST_MIN_STACK, or 2 MiB.
pub fn default_stack() -> usize {
    std::env::var("RUST_MIN_STACK").ok().and_then(|t| t.trim().parse::<usize>().ok()).unwrap_or(2 << 20)
}

/// Let a write past the file-size limit (`ulimit -f`) fail as any other write does, and be
/// reported with the file's name and status 2: by default the kernel kills the process
/// with SIGXFSZ at the first such write, with no message (status 153).
pub fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to "ignore" runs no handler of ours.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// End the process on SIGTERM, SIGHUP, SIGINT and SIGXCPU as their default would (status
/// 128 + the signal), but with the temporary file being written removed first; SIGXCPU
/// (the soft CPU limit, `ulimit -t`, which would kill with no word) says why and exits
/// with status 2. `run` puts its own Ctrl-C handler over SIGINT's after this.
pub fn end_on_signals() {
    for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGXCPU] {
        // A signal the parent set to be ignored stays ignored: `nohup` (SIGHUP), a
        // background job of a script (SIGINT).
        if ignored(sig) {
            continue;
        }
        // SAFETY: sigaction reads the struct it is given; the handler does only
        // async-signal-safe things (unlink, write, _exit).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Whether [`one_allocator_arena`] took: every thread then allocates from the one arena.
static ONE_ARENA: AtomicBool = AtomicBool::new(false);

/// Under an address-space limit (`ulimit -v`), make every thread of this process allocate
/// from glibc's main arena, and say whether it did (never without a limit, never on
/// another C library). Call it first thing in a program of our own, before any thread
/// starts; a library loaded into someone else's process (the Python module) leaves their
/// allocator alone.
///
/// glibc gives each thread that allocates an arena of its own (up to eight a core), and
/// each arena reserves address space a 64 MiB heap at a time whatever it holds: a run's
/// rayon workers, its progress thread and the Ctrl-C handler's reserved 256 MiB beside a
/// 24 MB heap, and under a `ulimit -v` of 300 MB `ring` at 256 ranks died of a failed
/// allocation that 200 MB and 400 MB let run (which thread allocated first decided). With
/// one arena the address space taken is what the heap holds, which the estimate counts.
/// Without a limit the arenas stay: threads that share one wait for each other (a
/// 36-second run of many full-data points took 10% longer with one).
pub fn one_allocator_arena() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets a tunable of the allocator, called before any other
        // thread of ours exists (an arena already made is kept, not moved).
        let took = address_space_limit().is_some() && unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) } == 1;
        ONE_ARENA.store(took, Ordering::Relaxed);
        took
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Whether [`one_allocator_arena`] took.
pub fn one_arena() -> bool {
    ONE_ARENA.load(Ordering::Relaxed)
}
