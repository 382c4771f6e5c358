//! A slow link between a client and a server on 127.0.0.1: what the client sends passes at most
//! at a given rate (the other way at once), and is counted, for a test to see how many bytes
//! crossed it.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running link from [`Throttle::port`] to a port on 127.0.0.1; it takes no new connection
/// once dropped.
pub struct Throttle {
    port: u16,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Throttle {
    /// Listens on a free port of 127.0.0.1 and forwards each connection to `target_port`, what
    /// the client sends at most `bytes_per_second`.
    pub fn start(target_port: u16, bytes_per_second: u64) -> Throttle {
        Throttle::open(target_port, bytes_per_second, u64::MAX)
    }

    /// Listens as [`Throttle::start`] does, but paces what the server sends back to
    /// `bytes_per_second` (what the client sends passes at once, counted): a download that must
    /// last long enough for a test to act while it runs.
    pub fn start_downloads(target_port: u16, bytes_per_second: u64) -> Throttle {
        Throttle::open(target_port, u64::MAX, bytes_per_second)
    }

    fn open(target_port: u16, sent_rate: u64, back_rate: u64) -> Throttle {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port for the throttle");
        let port = listener.local_addr().expect("the throttle's port").port();
        let (sent, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let (counted, stopped) = (sent.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", target_port)) else {
                    continue;
                };
                let (client_in, server_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let counted = counted.clone();
                std::thread::spawn(move || pass(client_in, server_out, sent_rate, Some(&counted)));
                std::thread::spawn(move || pass(server, client, back_rate, None));
            }
        });
        Throttle { port, sent, stop }
    }

    /// The port a client connects to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// How many bytes the clients sent through the link so far.
    pub fn bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then ends.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to` until either ends, paced to `rate` bytes a second (`u64::MAX`: at once)
/// and counted when asked.
fn pass(mut from: TcpStream, mut to: TcpStream, rate: u64, counted: Option<&AtomicU64>) {
    let started = Instant::now();
    let mut total = 0u64;
    let mut buffer = vec![0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buffer) {
        if n == 0 || to.write_all(&buffer[..n]).is_err() {
            break;
        }
        total += n as u64;
        if let Some(counted) = counted {
            counted.fetch_add(n as u64, Ordering::SeqCst);
        }
        if rate != u64::MAX {
            let due = started + Duration::from_secs_f64(total as f64 / rate as f64);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}
