//! A loop on its own thread that runs until it is told to stop: the
//! privileged tests' servers (a host's poll loop, a tokio runtime serving
//! HTTP) run so while the test drives the kernel's side.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A thread running a loop that checks a stop flag; [`LoopThread::join`]
/// stops it and returns what the loop returned. Dropped without `join` —
/// when a test fails — it stops and joins the thread too, so that no loop
/// keeps running on a namespace the test has already deleted.
pub struct LoopThread<T> {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<T>>,
}

impl<T: Send + 'static> LoopThread<T> {
    /// Starts `body` on a new thread; it must return soon after the flag
    /// it is given becomes `true`.
    pub fn spawn<F>(body: F) -> LoopThread<T>
    where
        F: FnOnce(&AtomicBool) -> T + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || body(&flag));
        LoopThread {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the loop and returns its result; a panic on the loop's thread
    /// fails the caller with the thread's message.
    pub fn join(mut self) -> T {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("joined once");
        match thread.join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl<T> Drop for LoopThread<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether `stop` has been set: the loop's condition, spelled once.
pub fn stopped(stop: &AtomicBool) -> bool {
    stop.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_stops_the_loop_and_returns_its_count() {
        let t = LoopThread::spawn(|stop| {
            let mut turns = 0u64;
            while !stopped(stop) {
                turns += 1;
                std::thread::yield_now();
            }
            turns
        });
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(t.join() > 0);
    }

    #[test]
    fn drop_stops_a_loop_that_would_otherwise_run_forever() {
        let ran = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&ran);
        let t = LoopThread::spawn(move |stop| {
            while !stopped(stop) {
                seen.store(true, Ordering::Relaxed);
                std::thread::yield_now();
            }
        });
        while !ran.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
        drop(t); // returns only once the thread has ended
    }

    #[test]
    #[should_panic(expected = "the loop failed")]
    fn a_panic_in_the_loop_reaches_join() {
        LoopThread::spawn(|_| -> () { panic!("the loop failed") }).join();
    }
}
