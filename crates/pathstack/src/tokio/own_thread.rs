//! [`Net::on_own_thread`]: a net whose driver runs on a thread and tokio
//! runtime of its own, so that the application blocking its own runtime
//! does not stall the stack (issue 27, problem 9).

use super::Net;
use std::io;
use std::sync::mpsc;

/// The name of a net's own thread (what `ps -L`, `top -H` and debuggers
/// show).
const THREAD_NAME: &str = "pathstack-net";

impl Net {
    /// A net whose driver runs on a thread of its own (named
    /// `pathstack-net`), in a `current_thread` tokio runtime with I/O and
    /// time made there, so that the stack answers ARP and pings, acknowledges
    /// TCP data and runs its timers whatever the application's runtime
    /// does (see the module's
    /// [blocking section](crate::tokio#do-not-block-the-runtime)).
    ///
    /// `make` runs on that thread, inside its runtime: a TAP's descriptor
    /// is registered with that runtime's reactor and the driver is spawned
    /// there. Build the net in it as usual:
    /// `Net::on_own_thread(|| Ok(Net::new(host)))`, or for a TAP
    /// `Net::on_own_thread(move || Ok(Net::tap(cfg, tap)?))` (a
    /// [`HostError`](crate::host::HostError) converts into an
    /// [`io::Error`]). An error from `make`, or from building the runtime
    /// or the thread, is this call's error; a panic in `make` resumes
    /// here. The call blocks until `make` has returned.
    ///
    /// The net's sockets are used from any runtime, or several: they wait
    /// on wakers, which tokio makes runtime-agnostic, and their own timers
    /// (a `tokio::time::timeout` around a call) run on the runtime of the
    /// task that awaits them. Only the driver lives on the thread, with
    /// whatever `make` itself spawned.
    ///
    /// The thread ends when the driver does: at once on
    /// [`Net::shutdown`] or a device error, and within a second after the
    /// last clone of the net is dropped. It is detached, not joined: it
    /// owns nothing the application waits for (the host goes with the last
    /// `Net`, wherever that is dropped), and joining it from a `Drop`
    /// could block the application's runtime, which this call exists to
    /// avoid, or deadlock when the last `Net` is dropped on the thread.
    pub fn on_own_thread<F>(make: F) -> io::Result<Net>
    where
        F: FnOnce() -> io::Result<Net> + Send + 'static,
    {
        // Room for the one answer, so the thread never waits on the caller.
        let (tx, rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || run(make, tx))?;
        match rx.recv() {
            Ok(made) => made,
            // The thread ended without an answer: `make` panicked. Resume
            // the panic here, as a direct call would.
            Err(mpsc::RecvError) => match thread.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => Err(io::Error::other(
                    "the net's thread ended without making the net",
                )),
            },
        }
    }
}

/// The thread's body: builds the runtime, makes the net in it, hands it
/// back through `tx` and runs the runtime until the driver ends.
fn run<F>(make: F, tx: mpsc::SyncSender<io::Result<Net>>)
where
    F: FnOnce() -> io::Result<Net>,
{
    let rt = match ::tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let made = rt.block_on(async { make() });
    let mut ended = match &made {
        Ok(net) => net.inner.ended.subscribe(),
        Err(_) => {
            let _ = tx.send(made);
            return;
        }
    };
    // The thread keeps no `Net`: the application's last one dropped ends
    // the driver, and that closes the watch.
    if tx.send(made).is_err() {
        // The caller is gone (it cannot be: it waits in `recv`); the net
        // went with the message.
        return;
    }
    // Parks the thread until the driver ends (true) or the net is gone
    // (closed): no polling, the runtime sleeps in its reactor.
    rt.block_on(async move {
        let _ = ended.wait_for(|ended| *ended).await;
    });
}
