//! Stopping long calls, and cleaning up when a process must end at once.
//!
//! The library installs no signal handlers. `with_interrupt_check` asks a check now and then
//! (at least every 64 MiB of data) during the calls `f` makes on this thread; when it returns
//! true, the call under way removes what it wrote and returns an `ErrorKind::Interrupted`
//! error, the destination as it was.
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::sys;

type Check<'a> = &'a dyn Fn() -> bool;

extern "C" fn ask(context: *mut c_void) -> c_int {
    // SAFETY: `context` is the `Check` that with_interrupt_check keeps alive while it is set.
    let check = unsafe { &*(context as *const Check) };
    // A panicking check must not unwind into C: it counts as "stop".
    catch_unwind(AssertUnwindSafe(|| check())).unwrap_or(true) as c_int
}

struct Unset;

impl Drop for Unset {
    fn drop(&mut self) {
        // SAFETY: clearing this thread's check takes no pointers.
        unsafe { sys::tl_set_interrupt_check(None, std::ptr::null_mut()) }
    }
}

/// Runs `f` with `check` asked by the tlio calls it makes on this thread. Not nested: the
/// check is cleared when `f` returns.
pub fn with_interrupt_check<R>(check: impl Fn() -> bool, f: impl FnOnce() -> R) -> R {
    let check_ref: Check = &check;
    // SAFETY: `check_ref` outlives the calls in `f`; Unset clears it on return or panic.
    unsafe {
        sys::tl_set_interrupt_check(Some(ask), &check_ref as *const Check as *mut c_void);
    }
    let _unset = Unset;
    f()
}

/// Removes the temporary file of every unfinished write of this process. Async-signal-safe:
/// for a signal handler that then ends the process.
pub fn remove_temporary_files() {
    // SAFETY: no arguments; safe from any thread or handler.
    unsafe { sys::tl_remove_temporary_files() }
}
