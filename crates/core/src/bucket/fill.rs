//! A mirror's first fill: every key of the prefix listed, then the sessions fetched newest first
//! a chunk at a time, its progress told after each chunk (what the window shows while the rows'
//! details arrive behind them).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use crate::bucket::cache::{last_used, SessionManifest};
use crate::bucket::mirror::{listed, FillProgress, Listing, Mirror};
use crate::bucket::plan::{newest, plan, planned_bytes, upload_state, Plan, SessionObjects};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// Sessions a first fill ([`Mirror::fill_all`]) fetches and records before it lets readers in.
const FILL_CHUNK: usize = 200;
/// Bytes planned for one chunk of a first refresh, past which it ends sooner (unless it holds
/// one session only): a chunk of large sessions does not keep readers out for long either.
const FILL_CHUNK_BYTES: u64 = 64 * 1024 * 1024;

impl Mirror {
    /// The refreshes of a mirror until one fills it (see [`Mirror::refresh`]): every
    /// key of the prefix listed, then the sessions fetched newest first, [`FILL_CHUNK`] at a
    /// time (fewer past [`FILL_CHUNK_BYTES`]), each chunk's files in place before it goes into
    /// the manifest, which is written after each chunk. The manifest is locked for one chunk at a time, not the whole fill: a reader of
    /// the mirror (an output's page, an export) waits for one chunk, not for every session. A
    /// session the mirror holds already (fetched on its own, or by a fill cut short) is kept as
    /// it is; one it holds that the prefix no longer does is dropped at the end, when the
    /// manifest is marked filled. A fill cut short (an error, [`Mirror::stop`]) leaves its
    /// finished chunks, and the next refresh fills on. `told` hears how far it is after each chunk.
    pub(super) fn fill_all(&self, now: SystemTime, told: &mut dyn FnMut(FillProgress)) -> Result<Listing, Error> {
        let before = self.fetched_bytes();
        let mut listing = Listing::default();
        let found = self.group(self.remote.list_all()?, &mut listing.refused);
        let mut order: Vec<(&SessionId, &SessionObjects)> = found.iter().collect();
        let opened = self.opened_times();
        order.sort_by_cached_key(|(id, objects)| {
            std::cmp::Reverse((last_used(&opened, id, newest(objects).as_deref()), (*id).clone()))
        });
        let mut budget = self.options.max_bytes;
        let (mut plans, mut costs) = (Vec::new(), Vec::new());
        for (id, objects) in order {
            let cost = planned_bytes(objects);
            if cost > budget {
                listing.left_out += 1;
                continue;
            }
            budget -= cost;
            let state = upload_state(objects, now, self.options.settle);
            plans.push(plan(id, objects, SessionManifest::default(), state));
            costs.push(cost);
        }
        let mut progress = FillProgress {
            fetched: 0,
            planned: plans.len(),
        };
        told(progress);
        let mut rest: &mut [Plan] = &mut plans;
        let mut rest_costs: &[u64] = &costs;
        while !rest.is_empty() {
            let len = chunk_len(rest_costs);
            let (chunk, after) = std::mem::take(&mut rest).split_at_mut(len);
            (rest, rest_costs) = (after, &rest_costs[len..]);
            if self.stopping.load(Ordering::SeqCst) {
                return Err(self
                    .source()
                    .error("", "the first fetch was stopped: the workspace was closed"));
            }
            let mut manifest = self.lock()?;
            // Fetched meanwhile on its own (`fetch_now`): kept as it is.
            let fetched_now: BTreeSet<SessionId> = chunk
                .iter_mut()
                .filter(|plan| manifest.sessions.contains_key(&plan.id))
                .map(|plan| {
                    plan.wanted.clear();
                    plan.id.clone()
                })
                .collect();
            if self.fetch(chunk) {
                self.folder.flush()?;
                listing.changed = true;
            }
            for plan in chunk.iter_mut() {
                if let Some(error) = plan.failed.take() {
                    listing.refused.push(error);
                    continue;
                }
                let objects = &found[&plan.id];
                if fetched_now.contains(&plan.id) {
                    listing.sessions.push(listed(&plan.id, plan.state, objects));
                    continue;
                }
                listing.changed |= self.commit(plan, objects, None)?;
                listing.sessions.push(listed(&plan.id, plan.state, objects));
                manifest
                    .sessions
                    .insert(plan.id.clone(), std::mem::take(&mut plan.manifest));
            }
            self.folder.write_manifest(&manifest)?;
            drop(manifest);
            progress.fetched += chunk.len();
            told(progress);
        }
        let mut manifest = self.lock()?;
        manifest.sessions.retain(|id, _| found.contains_key(id));
        manifest.filled = true;
        self.folder.write_manifest(&manifest)?;
        listing.changed |= self.remove_unlisted_folders(&manifest)?;
        listing.fetched_bytes = self.fetched_bytes() - before;
        Ok(listing)
    }
}

/// How many of the next sessions (their planned bytes `costs`, in order) make a chunk of a first
/// refresh: at most [`FILL_CHUNK`], and past [`FILL_CHUNK_BYTES`] no more than one session.
fn chunk_len(costs: &[u64]) -> usize {
    let mut bytes = 0u64;
    for (taken, cost) in costs.iter().take(FILL_CHUNK).enumerate() {
        bytes = bytes.saturating_add(*cost);
        if taken > 0 && bytes > FILL_CHUNK_BYTES {
            return taken;
        }
    }
    costs.len().min(FILL_CHUNK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_chunk_ends_at_its_count_or_past_its_bytes() {
        let mib = 1024 * 1024;
        assert_eq!(chunk_len(&[1; 500]), FILL_CHUNK);
        assert_eq!(chunk_len(&[1; 3]), 3);
        assert_eq!(chunk_len(&[40 * mib, 20 * mib, 10 * mib, 1]), 2);
        assert_eq!(chunk_len(&[100 * mib, 1, 1]), 1, "one session alone, however large");
        assert_eq!(chunk_len(&[u64::MAX, u64::MAX]), 1);
    }
}
