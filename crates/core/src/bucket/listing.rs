//! How a mirror lists its prefix: every key the first time, then the sessions' folders (their
//! pages asked at once) and inside the sessions not complete in the mirror; the objects grouped
//! by session, odd keys and over-full sessions refused; a cold prefix's ids a page at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use crate::bucket::cache::SourceManifest;
use crate::bucket::keys::session_path;
use crate::bucket::mirror::{Found, Mirror, CONCURRENT_LISTINGS, KEYS_A_PAGE, MAX_SESSION_OBJECTS};
use crate::bucket::plan::SessionObjects;
use crate::bucket::remote::RemoteObject;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

impl Mirror {
    /// The ids of the prefix's sessions (its folders, one name a session), handed to `page` a page
    /// of the provider's listing at a time (a thousand on S3) as each is answered, before the next
    /// is awaited, in the provider's order, with whether the listing is done; a name that is not
    /// an id is left out (the first refresh says it refused). `page` returning
    /// [`ControlFlow::Break`] ends the listing. Nothing is fetched or written: what a cold
    /// workspace shows before its first refresh.
    pub fn list_ids_by_page(&self, mut page: impl FnMut(Vec<SessionId>, bool) -> ControlFlow<()>) -> Result<(), Error> {
        self.remote.list_folders_by_page(|names, last| {
            page(
                names.iter().filter_map(|name| SessionId::parse(name).ok()).collect(),
                last,
            )
        })
    }

    /// The sessions of the prefix: the first time (nothing mirrored) one listing of every key;
    /// then the common prefixes, and inside the sessions not complete in the mirror.
    pub(super) fn list(
        &self,
        known: &SourceManifest,
        refused: &mut Vec<Error>,
    ) -> Result<BTreeMap<SessionId, Found>, Error> {
        let objects_of = |grouped: BTreeMap<SessionId, SessionObjects>| {
            grouped
                .into_iter()
                .map(|(id, objects)| (id, Found::Objects(objects)))
                .collect::<BTreeMap<_, _>>()
        };
        if known.sessions.is_empty() {
            return Ok(objects_of(self.group(self.remote.list_all()?, refused)));
        }
        let mut found = BTreeMap::new();
        let mut odd = Vec::new();
        let mut to_list = Vec::new();
        let folders = self.remote.list_folders(&page_splits(known))?;
        let count = folders.len();
        for name in folders {
            match SessionId::parse(&name) {
                Err(e) => odd.push(self.source().error(&format!("{name}/"), format!("refused: {e}"))),
                Ok(id) if known.sessions.get(&id).is_some_and(|m| m.complete) => {
                    found.insert(id, Found::Complete);
                }
                Ok(id) => to_list.push(id.to_string()),
            }
        }
        // One request a session, CONCURRENT_LISTINGS at once, against one page a thousand keys
        // one after the other (the sessions held counting their files, the others ten).
        let known_objects: usize = known.sessions.values().map(|m| m.files.len() + 1).sum();
        let objects = known_objects + (count.saturating_sub(known.sessions.len())) * 10;
        if to_list.len().div_ceil(CONCURRENT_LISTINGS) > objects.div_ceil(KEYS_A_PAGE) {
            for (id, objects) in self.group(self.remote.list_all()?, refused) {
                found.entry(id).or_insert(Found::Objects(objects));
            }
            return Ok(found);
        }
        refused.append(&mut odd);
        let mut listed = Vec::new();
        for objects in self.remote.list_under(&to_list, MAX_SESSION_OBJECTS + 1) {
            listed.extend(objects?);
        }
        found.extend(objects_of(self.group(listed, refused)));
        Ok(found)
    }

    /// The objects by session; refused keys and over-full sessions said in `refused`.
    pub(super) fn group(
        &self,
        objects: Vec<RemoteObject>,
        refused: &mut Vec<Error>,
    ) -> BTreeMap<SessionId, SessionObjects> {
        let mut grouped: BTreeMap<SessionId, SessionObjects> = BTreeMap::new();
        let mut over_full = BTreeSet::new();
        for object in objects {
            match session_path(self.source(), &object.key) {
                Err(error) => refused.push(error),
                Ok(None) => {}
                Ok(Some((id, path))) => {
                    let session = grouped.entry(id.clone()).or_default();
                    if session.len() == MAX_SESSION_OBJECTS {
                        over_full.insert(id);
                    } else {
                        session.insert(path, object);
                    }
                }
            }
        }
        for id in over_full {
            grouped.remove(&id);
            refused.push(self.source().error(
                &format!("{id}/"),
                format!("refused: the session holds more than {MAX_SESSION_OBJECTS} objects"),
            ));
        }
        grouped
    }
}

/// Where to cut the listing of the prefix's folders so that its pages are asked at once: the
/// sessions `known` in byte order (as the provider lists them, `id/`), cut into ranges of at most
/// a page each, every range but the last ending at a known id. One page (or none known): no cut.
fn page_splits(known: &SourceManifest) -> Vec<String> {
    let mut names: Vec<String> = known.sessions.keys().map(|id| format!("{id}/")).collect();
    names.sort_unstable();
    let ranges = names.len().div_ceil(KEYS_A_PAGE).max(1);
    let per_range = names.len().div_ceil(ranges).max(1);
    names
        .iter()
        .skip(per_range - 1)
        .step_by(per_range)
        .take(ranges - 1)
        .map(|name| name.trim_end_matches('/').to_owned())
        .collect()
}
