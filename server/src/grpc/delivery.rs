//! Delivery as the gRPC layer sees it: a draw (quota, holds, bytes, in one place: [`draw`] for a
//! unary call, [`take_message`] for a stream's message), what it holds until its bytes leave the
//! process, and what is counted when they do, or never do.
//!
//! A client that does not read its responses must not make the gateway hold entropy without
//! bound, nor count as served what it never got. So every draw first holds room ([`hold`]) on
//! three allowances: its key's `max_undelivered_bytes` (for the bytes drawn), and its
//! connection's and the whole process's (for the bytes its response puts on the wire, at most
//! [`wire_bound`]; hex doubles them). Past any of them the draw waits within its deadline, then
//! fails with RESOURCE_EXHAUSTED naming the allowance, nothing consumed.
//!
//! The holds ride in an [`Undelivered`], one per unary response or stream message, which the
//! transport settles when the message's last byte has been written to the socket
//! ([`crate::transport::ledger`]): then, and only then, its bytes count as served and its holds
//! are given back. A message the transport never writes (the stream was reset, the connection
//! closed or stalled) counts as discarded. Either way the count happens once: [`Totals`] keeps
//! the gateway's served and discarded bytes, which only grow.

use std::sync::Arc;

use tokio::time::Instant;

use crate::domain::allowance::{Account, Holds};
use crate::domain::drbg::{self, Instance, Label, Reseeding};
use crate::domain::pool::{Drawn, Kinds, Pool, Provenance, TakeError, Tenant};
use crate::domain::quota::{KeyQuota, QuotaError};
use crate::domain::secret::SecretBytes;
use crate::domain::served::Totals;
use crate::metrics::{GatewayMetrics, KeyHandles, Method};
use crate::transport::{ConnectionInfo, Owing, Settle};

/// Bytes a response carries besides its payload, at most: the gRPC prefix, field tags and
/// lengths, and its provenance (kinds, two chunk references, the collector ids of a draw from
/// up to 48 collectors). A response that needs more holds the rest if there is room
/// ([`Undelivered::fit`]).
pub(crate) const RESPONSE_OVERHEAD: usize = 4 << 10;

/// The most bytes a response with `payload` bytes of values puts on the wire.
pub(crate) fn wire_bound(payload: usize) -> usize {
    payload + RESPONSE_OVERHEAD
}

/// Counts bytes served for one call's method and key.
#[derive(Debug, Clone)]
pub(crate) struct ServedMeter {
    metrics: Arc<GatewayMetrics>,
    method: Method,
    key: Option<Arc<KeyHandles>>,
}

impl ServedMeter {
    /// A meter for calls of `method` by the key whose handles are `key`.
    pub(crate) fn new(
        metrics: &Arc<GatewayMetrics>,
        method: Method,
        key: Option<Arc<KeyHandles>>,
    ) -> Self {
        Self { metrics: metrics.clone(), method, key }
    }

    /// Counts `n` bytes as served.
    pub(crate) fn served(&self, n: usize) {
        self.metrics.served(self.method, n as u64);
        if let Some(handles) = &self.key {
            handles.served(n as u64);
        }
    }

    /// Counts `n` bytes of DRBG output as served.
    pub(crate) fn drbg_served(&self, n: usize) {
        self.metrics.drbg_served(self.method, n as u64);
    }
}

/// Drawn bytes of one response (or stream message) on their way to the caller. Dropped
/// without being delivered, its bytes count as discarded.
#[derive(Debug)]
pub(crate) struct Undelivered {
    n: usize,
    /// DRBG output, not pool bytes: counted apart, and nothing of the pool is lost with it.
    drbg: bool,
    holds: Holds,
    /// The accounts holding wire bytes (the connection's, the process's).
    wire: Wire,
    meter: ServedMeter,
    totals: Arc<Totals>,
    _owing: Option<Owing>,
}

impl Undelivered {
    /// `n` drawn bytes holding `holds` (from [`hold`]), counted by `meter` and in `totals` once
    /// settled; owed on `connection` until then.
    pub(crate) fn new(
        n: usize,
        holds: Held,
        meter: ServedMeter,
        totals: Arc<Totals>,
        connection: Option<&ConnectionInfo>,
    ) -> Self {
        let Held { holds, wire, .. } = holds;
        let owing = connection.map(ConnectionInfo::owe);
        Self { n, drbg: false, holds, wire, meter, totals, _owing: owing }
    }

    /// Marks these bytes DRBG output: served, they count as DRBG bytes; never delivered, as
    /// nothing (no pool byte was lost with them).
    pub(crate) fn of_drbg(mut self) -> Self {
        self.drbg = true;
        self
    }

    /// Bytes drawn.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Adds another draw of the same response.
    pub(crate) fn absorb(&mut self, other: Undelivered) {
        let mut other = other;
        self.n += std::mem::take(&mut other.n);
        self.holds.merge(std::mem::take(&mut other.holds));
    }

    /// The bytes went back to the pool (the call failed): nothing to count.
    pub(crate) fn abandon(mut self) {
        self.n = 0;
    }

    /// Makes the wire holds cover `wire` bytes, the response's size once built: gives back
    /// what the bound over-estimated, or holds more if there is room.
    pub(crate) fn fit(&mut self, wire: usize) {
        for account in self.wire.iter() {
            let held = self.holds.on(account);
            if wire < held {
                self.holds.give_back_on(account, held - wire);
            } else if let Some(more) = account.try_hold(wire - held) {
                self.holds.add(more);
            }
        }
    }
}

impl Settle for Undelivered {
    fn delivered(mut self: Box<Self>) {
        let n = std::mem::take(&mut self.n);
        if self.drbg {
            self.meter.drbg_served(n);
            self.totals.count_drbg_served(n);
        } else {
            self.meter.served(n);
            self.totals.count_served(n);
        }
    }

    fn discarded(self: Box<Self>) {
        // Counted as it drops.
    }
}

impl Drop for Undelivered {
    fn drop(&mut self) {
        if self.n > 0 && !self.drbg {
            self.totals.count_discarded(self.n);
        }
    }
}

/// The accounts that hold a response's wire bytes: its connection's, if it came over one we
/// serve, and the process's.
#[derive(Debug, Clone)]
struct Wire(Option<Account>, Account);

impl Wire {
    fn iter(&self) -> impl Iterator<Item = &Account> {
        self.0.iter().chain(std::iter::once(&self.1))
    }
}

/// What [`hold`] took: holds for a draw, and which of them cover wire bytes.
#[derive(Debug)]
pub struct Held {
    holds: Holds,
    /// The key's account (drawn bytes).
    key: Account,
    /// The accounts holding wire bytes.
    wire: Wire,
}

impl Held {
    /// Keeps what a draw that came out shorter needs: `drawn` bytes on the key's account,
    /// `wire` on the others; gives back the rest.
    pub fn trim(&mut self, drawn: usize, wire: usize) {
        let held = self.holds.on(&self.key);
        self.holds.give_back_on(&self.key, held.saturating_sub(drawn));
        for account in self.wire.iter() {
            let held = self.holds.on(account);
            self.holds.give_back_on(account, held.saturating_sub(wire));
        }
    }
}

/// Holds room for a draw of `drawn` bytes whose response takes at most `wire` bytes: on the
/// key's allowance, the connection's (when the call came over one) and the process's
/// `responses`, waiting until `deadline`. The error names the allowance that had no room; what
/// was held is given back.
pub async fn hold(
    quota: &KeyQuota,
    connection: Option<&ConnectionInfo>,
    responses: &Account,
    (drawn, wire): (usize, usize),
    deadline: Option<Instant>,
) -> Result<Held, Full> {
    let mut holds = Holds::default();
    let key = quota.undelivered();
    holds.add(key.hold(drawn, deadline).await.ok_or_else(|| Full::of(key, drawn))?);
    let on_wire = Wire(connection.map(|c| c.responses().clone()), responses.clone());
    for account in on_wire.iter() {
        holds.add(account.hold(wire, deadline).await.ok_or_else(|| Full::of(account, wire))?);
    }
    Ok(Held { holds, key: key.clone(), wire: on_wire })
}

/// Where a call draws from, and what its responses will hold room on: the pool, the call's key
/// (its byte quota and allowance, its place among the pool's tenants), its connection (when it
/// came over one we serve) and the process's response allowance.
pub(crate) struct Source<'a> {
    /// The pool.
    pub(crate) pool: &'a Pool,
    /// The key's byte quota and undelivered allowance.
    pub(crate) quota: &'a KeyQuota,
    /// The key, among the pool's tenants (fair share).
    pub(crate) tenant: Tenant,
    /// The connection the call came over.
    pub(crate) connection: Option<&'a ConnectionInfo>,
    /// The process's allowance for response bytes.
    pub(crate) responses: &'a Account,
}

/// Why a draw took nothing. Nothing was consumed.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The key's byte quota.
    Quota(QuotaError),
    /// An allowance had no room in time.
    Full(Full),
    /// The pool had not the bytes in time, or cannot have them.
    Take(TakeError),
}

/// Takes exactly `n` bytes of the `accept`ed kinds from `from` by `until`: the key's byte
/// quota first, then room on its allowances for `n` drawn bytes and a response of at most
/// `wire` bytes, then the bytes. The holds cover the bytes until they are dropped (CheckQuality:
/// tested, never sent) or become an [`Undelivered`] ([`draw`]).
pub(crate) async fn take(
    from: &Source<'_>,
    (n, wire, accept): (usize, usize, Kinds),
    until: Instant,
) -> Result<(Drawn, Held), Refused> {
    from.quota.admit_bytes(n).map_err(Refused::Quota)?;
    let held = hold(from.quota, from.connection, from.responses, (n, wire), Some(until))
        .await
        .map_err(Refused::Full)?;
    let drawn =
        from.pool.take_for(from.tenant, n, accept, Some(until)).await.map_err(Refused::Take)?;
    Ok((drawn, held))
}

/// A stream message's draw from `from`: between `least` and `most` bytes of the `accept`ed
/// kinds. The key's byte tokens first (metered: a stream waits for them, it is never refused),
/// then room on its allowances for `most` bytes within `hold_for` of getting them, then the bytes, unless
/// `give_up` resolves first (the stream's stall rule). The holds are trimmed to what was drawn.
pub(crate) async fn take_message(
    from: &Source<'_>,
    (least, most, accept): (usize, usize, Kinds),
    hold_for: std::time::Duration,
    give_up: impl Future<Output = ()>,
) -> Result<(Drawn, Held), Refused> {
    from.quota.wait_bytes(most).await;
    let hold_until = Instant::now() + hold_for;
    let mut held = hold(
        from.quota,
        from.connection,
        from.responses,
        (most, wire_bound(most)),
        Some(hold_until),
    )
    .await
    .map_err(Refused::Full)?;
    let take = from.pool.take_between(from.tenant, least..=most, accept, None);
    let drawn = tokio::select! {
        drawn = take => drawn.map_err(Refused::Take)?,
        () = give_up => return Err(Refused::Take(TakeError::TimedOut)),
    };
    // Hold only what was drawn: a short message frees the rest of its allowances.
    held.trim(drawn.len(), wire_bound(drawn.len()));
    Ok((drawn, held))
}

/// [`take`] for a response: the bytes, and what they owe until they leave the process, counted
/// by `meter` and in `totals` once settled.
pub(crate) async fn draw(
    from: &Source<'_>,
    (n, wire, accept): (usize, usize, Kinds),
    until: Instant,
    (meter, totals): (ServedMeter, Arc<Totals>),
) -> Result<(Drawn, Undelivered), Refused> {
    let (drawn, held) = take(from, (n, wire, accept), until).await?;
    Ok((drawn, Undelivered::new(n, held, meter, totals, from.connection)))
}

/// DRBG output of one response, with what it says about itself.
#[derive(Debug)]
pub(crate) struct Generated {
    /// The output, wiped when dropped unless sent.
    pub(crate) bytes: SecretBytes,
    /// The instance as of the response's first byte.
    pub(crate) label: Label,
    /// Where the instance's seeds came from, as of its last byte.
    pub(crate) seeds: Provenance,
}

/// Pool bytes for a DRBG seed: `n` bytes of the `accept`ed kinds for the key of `from` by
/// `until`, against its byte quota and fair share like any draw, with their origin. Counted as
/// seed bytes in `totals` (they are wiped once used, never served).
async fn seed(
    from: &Source<'_>,
    n: usize,
    accept: Kinds,
    until: Option<Instant>,
    totals: &Totals,
) -> Result<(Drawn, Provenance), Refused> {
    from.quota.admit_bytes(n).map_err(Refused::Quota)?;
    let drawn = from.pool.take_for(from.tenant, n, accept, until).await.map_err(Refused::Take)?;
    let origin = drawn.provenance(Instant::now()).ok_or(Refused::Take(TakeError::TimedOut))?;
    totals.count_drbg_seed(n);
    Ok((drawn, origin))
}

/// A call's or a stream's DRBG instance, instantiated from the pool when first used.
#[derive(Debug)]
pub(crate) struct DrbgSource {
    instance: Option<Instance>,
    prediction_resistance: bool,
    reseeding: Reseeding,
}

impl DrbgSource {
    /// No instance yet; it is instantiated by the first [`Self::generate`].
    pub(crate) fn new(prediction_resistance: bool, reseeding: Reseeding) -> Self {
        Self { instance: None, prediction_resistance, reseeding }
    }

    /// `n` bytes of output: the instance instantiated (first use) or reseeded (as it asks)
    /// with pool bytes drawn from `from` by `until`, then one generate request per
    /// [`drbg::MAX_REQUEST`] bytes. A seed that does not come in time fails the draw; what the
    /// seeds took stays taken (a seed is never used twice), nothing is served.
    pub(crate) async fn generate(
        &mut self,
        from: &Source<'_>,
        (n, accept): (usize, Kinds),
        until: Option<Instant>,
        totals: &Totals,
    ) -> Result<Generated, Refused> {
        let instance = match &mut self.instance {
            Some(instance) => instance,
            slot @ None => {
                let (seed, origin) = seed(from, drbg::SEED_BYTES, accept, until, totals).await?;
                let instance = Instance::instantiate(
                    &seed,
                    origin,
                    Instant::now(),
                    self.prediction_resistance,
                    self.reseeding,
                )
                .map_err(|_| Refused::Take(TakeError::TimedOut))?;
                slot.insert(instance)
            }
        };
        let mut out = SecretBytes::new(vec![0; n]);
        // The label as of the first byte: after the reseed that may come before it.
        let mut label = None;
        for request in out.as_mut_slice().chunks_mut(drbg::MAX_REQUEST) {
            if instance.needs_reseed(Instant::now()) {
                let (seed, origin) = seed(from, drbg::RESEED_BYTES, accept, until, totals).await?;
                instance
                    .reseed(&seed, &origin, Instant::now())
                    .map_err(|_| Refused::Take(TakeError::TimedOut))?;
            }
            label.get_or_insert_with(|| instance.label());
            instance.generate(request).map_err(|_| Refused::Take(TakeError::TimedOut))?;
        }
        let label = label.unwrap_or_else(|| instance.label());
        Ok(Generated { bytes: out, label, seeds: instance.seeds().clone() })
    }
}

/// [`take`] for a DRBG construction: the key's DRBG byte quota first, then room on its
/// allowances for `n` bytes and a response of at most `wire` bytes, then `n` bytes of output of
/// `drbg` (seeded from the pool as it needs, by `until`).
pub(crate) async fn take_drbg(
    from: &Source<'_>,
    drbg: &mut DrbgSource,
    (n, wire, accept): (usize, usize, Kinds),
    until: Instant,
    totals: &Totals,
) -> Result<(Generated, Held), Refused> {
    from.quota.admit_drbg_bytes(n).map_err(Refused::Quota)?;
    let held = hold(from.quota, from.connection, from.responses, (n, wire), Some(until))
        .await
        .map_err(Refused::Full)?;
    let generated = drbg.generate(from, (n, accept), Some(until), totals).await?;
    Ok((generated, held))
}

/// [`take_drbg`] for a response: the output, and what it owes until it leaves the process,
/// counted as DRBG output by `meter` and in `totals` once settled.
pub(crate) async fn draw_drbg(
    from: &Source<'_>,
    drbg: &mut DrbgSource,
    (n, wire, accept): (usize, usize, Kinds),
    until: Instant,
    (meter, totals): (ServedMeter, Arc<Totals>),
) -> Result<(Generated, Undelivered), Refused> {
    let (generated, held) = take_drbg(from, drbg, (n, wire, accept), until, &totals).await?;
    Ok((generated, Undelivered::new(n, held, meter, totals, from.connection).of_drbg()))
}

/// A stream's DRBG source: one instance for the whole stream, whose messages take their turns
/// in the order the stream planned them. So message after message, the labels count the
/// instance's output up: each says exactly how many bytes the messages before it took since
/// the last reseed.
#[derive(Debug)]
pub(crate) struct StreamDrbg {
    source: tokio::sync::Mutex<DrbgSource>,
    /// The turn whose message goes next.
    turn: tokio::sync::watch::Sender<u64>,
}

impl StreamDrbg {
    pub(crate) fn new(source: DrbgSource) -> Self {
        Self { source: tokio::sync::Mutex::new(source), turn: tokio::sync::watch::Sender::new(0) }
    }
}

/// A stream message of DRBG output, the stream's `turn`-th. Once the turns before it are done:
/// the key's DRBG byte tokens (metered: waited for, never refused), room on its allowances for
/// `n` bytes within `hold_for` of getting them, then `n` bytes of the stream's instance, seeded
/// from the pool as it needs within `hold_for`.
///
/// A message waiting for its turn holds nothing but its place in the stream's queue: were it to
/// hold room first, the streams of one key could each hold all of the key's room with messages
/// waiting for a turn, while the message whose turn it is waits for room.
pub(crate) async fn take_drbg_message(
    from: &Source<'_>,
    (drbg, turn): (&StreamDrbg, u64),
    (n, accept): (usize, Kinds),
    hold_for: std::time::Duration,
    totals: &Totals,
) -> Result<(Generated, Held), Refused> {
    // The sender lives in `drbg`, so the wait only ends on the turn.
    let _ = drbg.turn.subscribe().wait_for(|next| *next == turn).await;
    let taken = async {
        from.quota.wait_drbg_bytes(n).await;
        let until = Instant::now() + hold_for;
        let held =
            hold(from.quota, from.connection, from.responses, (n, wire_bound(n)), Some(until))
                .await
                .map_err(Refused::Full)?;
        let mut source = drbg.source.lock().await;
        let generated = source.generate(from, (n, accept), Some(until), totals).await?;
        Ok((generated, held))
    }
    .await;
    drbg.turn.send_modify(|next| *next += 1);
    taken
}

/// An allowance that had no room in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{setting} is full: {held} bytes drawn and not yet delivered of {cap}, no room for {wanted} \
     more"
)]
pub struct Full {
    /// The setting of the allowance (`max_undelivered_bytes`, ...).
    pub setting: &'static str,
    /// Held now.
    pub held: usize,
    /// Its capacity.
    pub cap: usize,
    /// What the draw needed.
    pub wanted: usize,
}

impl Full {
    fn of(account: &Account, wanted: usize) -> Self {
        Self { setting: account.name(), held: account.held(), cap: account.cap(), wanted }
    }
}

/// Settles a response's dues as delivered, for callers that use the service in process, with
/// no transport to write its bytes (tests, fuzzing, benchmarks).
pub fn delivered_in_process<T>(response: &mut tonic::Response<T>) {
    if let Some(dues) = response.extensions_mut().remove::<crate::transport::Dues>() {
        for settle in dues.rest() {
            settle.delivered();
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::domain::quota::{KeyQuota, Limits};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// No two DRBG instances ever share a seed: many instances, interleaved, reseeding at
        /// random intervals, all seeded from one pool whose every 8-byte word is unique. Two
        /// instances seeded alike would produce the same output; every output block differs,
        /// and the pool gave exactly one seed's bytes per instantiation and reseed.
        #[test]
        fn no_two_instances_share_a_seed(
            instances in 2usize..12,
            interval_bytes in 1u64..200_000,
            sizes in proptest::collection::vec(1usize..150_000, 1..24),
            prediction_resistance in any::<bool>(),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let pool = Pool::new(4 << 20);
                let words: Vec<u8> = (0u64..(4 << 17)).flat_map(|i| i.to_le_bytes()).collect();
                pool.put_test_bytes(&words).expect("fits");
                let quota = KeyQuota::new(Limits::default());
                let responses = Account::new("max_buffered_bytes", usize::MAX);
                let from = Source {
                    pool: &pool,
                    quota: &quota,
                    tenant: Tenant::named("k"),
                    connection: None,
                    responses: &responses,
                };
                let totals = Totals::default();
                let reseeding = Reseeding {
                    interval_bytes,
                    interval: std::time::Duration::from_secs(3600),
                };
                let mut drbgs: Vec<DrbgSource> = (0..instances)
                    .map(|_| DrbgSource::new(prediction_resistance, reseeding))
                    .collect();
                let mut seen = std::collections::HashSet::new();
                let mut ids = std::collections::HashSet::new();
                for (i, &n) in sizes.iter().enumerate() {
                    let drbg = &mut drbgs[i % instances];
                    let out = drbg
                        .generate(&from, (n, Kinds::ANY), None, &totals)
                        .await
                        .expect("the pool holds the seeds");
                    ids.insert(out.label.instance_id.clone());
                    for block in out.bytes.chunks_exact(16) {
                        prop_assert!(seen.insert(block.to_vec()), "an output block repeated");
                    }
                }
                let used = instances.min(sizes.len());
                prop_assert_eq!(ids.len(), used, "one instance id per instance");
                // The reseeds the policy asks for: before a request, with prediction
                // resistance, or once `interval_bytes` were produced since the last seeding.
                let mut since = vec![0u64; instances];
                let mut reseeds = 0u64;
                for (i, &n) in sizes.iter().enumerate() {
                    let mut left = n;
                    while left > 0 {
                        let request = left.min(drbg::MAX_REQUEST);
                        if prediction_resistance || since[i % instances] >= interval_bytes {
                            reseeds += 1;
                            since[i % instances] = 0;
                        }
                        since[i % instances] += request as u64;
                        left -= request;
                    }
                }
                let seeds = totals.drbg_seeds();
                prop_assert_eq!(
                    seeds,
                    (used * drbg::SEED_BYTES) as u64 + reseeds * drbg::RESEED_BYTES as u64
                );
                prop_assert_eq!(pool.stats().taken_total, seeds, "seeds are the only takes");
                Ok(())
            })?;
        }
    }
}
