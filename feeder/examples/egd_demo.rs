//! `egd_demo`: the feeder's EGD server ([`entropy_feeder::egd::serve`]) with bytes from a file
//! instead of a gateway, recording every hand-out. For developing and checking the QEMU guest
//! harness (`scripts/lab/qemu_guest.py --source demo`) without a gateway or the full feeder.
//!
//!     egd_demo --socket PATH --source FILE --record FILE [--max-clients N] [--idle-ms MS]
//!
//! Hands out FILE's bytes in order, each once; appends `OFFSET LENGTH` to the record file for
//! every hand-out (so the record says exactly which bytes left, in which order). When FILE is
//! used up the supply closes (clients are closed). Runs until SIGINT or SIGTERM.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use entropy_feeder::egd::{EgdLimits, serve};
use entropy_feeder::entropy::{Closed, Entropy};
use tokio::net::UnixListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use zeroize::Zeroizing;

/// A file's bytes, handed out in order, each hand-out recorded.
struct FileSupply {
    bytes: Vec<u8>,
    state: Mutex<(usize, File)>,
}

impl FileSupply {
    fn hand_out(&self, n: usize) -> Result<Zeroizing<Vec<u8>>, Closed> {
        let mut state = self.state.lock().map_err(|_| Closed)?;
        let (next, record) = &mut *state;
        let end = next.checked_add(n).filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(Closed);
        };
        let out = Zeroizing::new(self.bytes[*next..end].to_vec());
        if n > 0 {
            writeln!(record, "{next} {n}").map_err(|_| Closed)?;
        }
        *next = end;
        Ok(out)
    }
}

impl Entropy for FileSupply {
    async fn take(&self, n: usize) -> Result<Zeroizing<Vec<u8>>, Closed> {
        self.hand_out(n)
    }

    fn take_now(&self, max: usize) -> Zeroizing<Vec<u8>> {
        self.hand_out(max.min(self.available())).unwrap_or_else(|_| Zeroizing::new(Vec::new()))
    }

    fn available(&self) -> usize {
        let next = self.state.lock().map(|s| s.0).unwrap_or(self.bytes.len());
        self.bytes.len().saturating_sub(next)
    }
}

struct Args {
    socket: PathBuf,
    source: PathBuf,
    record: PathBuf,
    limits: EgdLimits,
}

fn args() -> anyhow::Result<Args> {
    let mut socket = None;
    let mut source = None;
    let mut record = None;
    let mut limits = EgdLimits { max_clients: 16, idle_timeout: Duration::from_secs(30) };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--socket" => socket = Some(PathBuf::from(value)),
            "--source" => source = Some(PathBuf::from(value)),
            "--record" => record = Some(PathBuf::from(value)),
            "--max-clients" => limits.max_clients = value.parse()?,
            "--idle-ms" => limits.idle_timeout = Duration::from_millis(value.parse()?),
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    Ok(Args {
        socket: socket.context("--socket is required")?,
        source: source.context("--source is required")?,
        record: record.context("--record is required")?,
        limits,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let bytes = std::fs::read(&args.source).context("reading --source")?;
    let record = File::create(&args.record).context("creating --record")?;
    let supply = Arc::new(FileSupply { bytes, state: Mutex::new((0, record)) });
    let _ = std::fs::remove_file(&args.socket);
    let listener = UnixListener::bind(&args.socket).context("binding --socket")?;
    let shutdown = CancellationToken::new();
    let mut term = signal(SignalKind::terminate())?;
    let stop = shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        stop.cancel();
    });
    println!("egd_demo: serving {} on {}", args.source.display(), args.socket.display());
    serve(listener, supply, args.limits, shutdown).await?;
    let _ = std::fs::remove_file(&args.socket);
    Ok(())
}
