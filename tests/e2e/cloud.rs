//! A bucket prefix as a read-only workspace in the real window: moto's S3 server on 127.0.0.1
//! (`test_servers::moto`, `ZIBBY_MOTO_VENV`), real captured sessions uploaded to it, the app
//! started on `s3://bucket/prefix` with the provider's standard variables pointing at it, the
//! mirror in the test's own cache folder.

use fantoccini::{Client, Locator};
use serde_json::json;
use test_servers::moto::Moto;

use crate::buckets::{profile_env, upload, BUCKET};
use crate::harness::{click, eventually, screenshot, wait_for, App, Workspace, FANOUT, PIPELINE};

/// The window's environment for a bucket on `moto`: its variables (endpoint, keys, region) and
/// a cache folder of `here`'s own.
fn bucket_env(moto: &Moto, here: &Workspace) -> Vec<(&'static str, String)> {
    let mut env = moto.env();
    env.push(("XDG_CACHE_HOME", here.data_home().join("cache").display().to_string()));
    env
}

/// Runs `test` against the window opened on `target` (a bucket's URL or a local folder) with
/// `here`'s store and the bucket's environment (`bucket_env`).
async fn run_with_bucket<F, Fut>(moto: &Moto, here: &Workspace, target: &str, test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let env = bucket_env(moto, here);
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    App::run_on_with_env(here, target, &[], &env_refs, test).await;
}

/// Session `session_id` is listed with its details: fetched, not a cold bucket's row of the id
/// alone (`fetching…`).
async fn row_appears(client: &Client, session_id: &str) {
    eventually(&format!("session {session_id} is listed"), || async {
        client
            .find(Locator::Css(&format!(
                "tr[data-session-id='{session_id}'] td.status .badge:not([data-status='fetching'])"
            )))
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    })
    .await;
}

async fn text_of(client: &Client, css: &str) -> Result<String, String> {
    let element = client
        .find(Locator::Css(css))
        .await
        .map_err(|e| format!("no {css}: {e}"))?;
    element.text().await.map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_bucket_prefix_opens_read_only_and_lists_a_session_uploaded_while_open() {
    let moto = Moto::start();
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::empty();
    let url = format!("s3://{BUCKET}/ci");
    let moto = std::sync::Arc::new(moto);
    let uploader = moto.clone();
    let expected_url = url.clone();
    run_with_bucket(&moto, &here, &url, |client| async move {
        eventually("the label shows the bucket URL and read-only", || async {
            let seen = text_of(&client, "#workspace-cloud").await?;
            let badge = text_of(&client, "#workspace-read-only").await?;
            (seen == expected_url && badge == "read-only")
                .then_some(())
                .ok_or(format!("{seen} {badge}"))
        })
        .await;
        row_appears(&client, PIPELINE.id).await;
        // Read-only: no Run bar, no Delete in the table.
        assert!(client.find(Locator::Css("#run-button")).await.is_err(), "no Run");
        assert!(
            client.find(Locator::Css("[data-testid='delete']")).await.is_err(),
            "no Delete in the table"
        );
        screenshot(&client, "cloud-workspace.png").await;

        // A session's output is read from the mirror.
        click(&client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        for absent in [
            "#session-delete",
            "#session-rerun",
            "#session-continue",
            "#session-stop",
        ] {
            assert!(client.find(Locator::Css(absent)).await.is_err(), "{absent} is absent");
        }
        // Pins are kept locally (the store's key is the mirror, one per source).
        click(&client, "#session-pin").await;
        eventually("the session is pinned", || async {
            let pin = text_of(&client, "#session-pin").await?;
            pin.contains("Pinned").then_some(()).ok_or(pin)
        })
        .await;
        click(&client, "[data-tab='files']").await;
        click(&client, ".file-entry[data-path='plan/raw_stream_output.txt']").await;
        eventually("the node's output is shown", || async {
            let text = text_of(&client, "#file-viewer").await?;
            text.contains("Write the code").then_some(()).ok_or(text)
        })
        .await;
        screenshot(&client, "cloud-session-files.png").await;

        // The core refuses a write, naming the source, whatever the window shows.
        let refused = crate::harness::call_backend(&client, "sessionDelete", vec![json!(PIPELINE.id)]).await;
        let message = refused["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(
            message.contains(&expected_url) && message.contains("read-only"),
            "{refused}"
        );

        // A session uploaded while the window is open appears (the poller, then the watcher).
        let (uploader, fanout) = (uploader.clone(), FANOUT);
        tokio::task::spawn_blocking(move || upload(&uploader, &[fanout], false))
            .await
            .expect("the upload");
        click(&client, "#session-close").await;
        row_appears(&client, FANOUT.id).await;

        // Open Recent remembers it as its URL.
        click(&client, "#workspace-switcher").await;
        wait_for(&client, &format!(".recent-workspace[data-path='{expected_url}']")).await;
    })
    .await;
    drop(moto);
}

#[tokio::test]
async fn the_form_opens_a_bucket_prefix_at_an_endpoint_with_a_profile_and_open_recent_opens_it_again() {
    let moto = Moto::start();
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::with_sessions(&[FANOUT]);
    // No keys, no endpoint, no region in the variables: the keys come from the form's profile,
    // the endpoint from its endpoint field.
    let env = profile_env(&here);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let endpoint = moto.endpoint();
    // Opened before: the form opens them without the system's question (the dialogs binary's
    // `opening` answers it for a bucket at an endpoint, then checks Open Recent keeps both).
    let at_endpoint = |url: &str| {
        studio_core::bucket::Source::parse(url)
            .and_then(|source| source.with_endpoint(endpoint.clone()).with_profile("moto-reader"))
            .expect("a bucket URL")
            .target()
    };
    here.opened_before(&[
        at_endpoint("s3://no-such-bucket/ci"),
        at_endpoint(&format!("s3://{BUCKET}/ci")),
    ]);
    let here_path = here.path().display().to_string();
    let recent_here = here_path.clone();
    App::run_on_with_env(&here, &recent_here, &[], &env, |client| async move {
        row_appears(&client, FANOUT.id).await;
        click(&client, "#workspace-switcher").await;
        wait_for(&client, "#workspace-open-cloud").await;
        click(&client, "#workspace-open-cloud").await;
        let field = wait_for(&client, "#cloud-url").await;
        field.send_keys("s3://no-such-bucket/ci").await.expect("type the URL");
        let endpoint_field = wait_for(&client, "#cloud-endpoint").await;
        endpoint_field.send_keys(&endpoint).await.expect("type the endpoint");
        let profile_field = wait_for(&client, "#cloud-profile").await;
        profile_field.send_keys("moto-reader").await.expect("type the profile");
        click(&client, "#cloud-open").await;
        eventually("the form names the source it could not list", || async {
            let form = text_of(&client, "[data-testid='cloud-form']").await?;
            form.contains("s3://no-such-bucket/ci").then_some(()).ok_or(form)
        })
        .await;
        screenshot(&client, "cloud-form-error.png").await;

        let field = wait_for(&client, "#cloud-url").await;
        field.clear().await.expect("clear the field");
        field
            .send_keys(&format!("s3://{BUCKET}/ci"))
            .await
            .expect("type the URL");
        click(&client, "#cloud-open").await;
        row_appears(&client, PIPELINE.id).await;
        wait_for(&client, "#workspace-read-only").await;
        assert!(
            client
                .find(Locator::Css(&format!("tr[data-session-id='{}']", FANOUT.id)))
                .await
                .is_err(),
            "the local workspace's sessions are gone from the table"
        );

        // Back to the local workspace: writable again.
        click(&client, "#workspace-switcher").await;
        click(&client, &format!(".recent-workspace[data-path='{here_path}']")).await;
        row_appears(&client, FANOUT.id).await;
        assert!(client.find(Locator::Css("#workspace-read-only")).await.is_err());
        wait_for(&client, "[data-testid='delete']").await;

        // Open Recent opens the bucket again at the endpoint, with the profile, that the form
        // gave: neither is in the variables. (That Open Recent records both from the form is the
        // dialogs binary's `opening`: here they were recorded before, so that no question comes.)
        click(&client, "#workspace-switcher").await;
        let recent = format!(".recent-workspace[data-path^='s3://{BUCKET}/ci?']");
        click(&client, &recent).await;
        wait_for(&client, "#workspace-read-only").await;
        row_appears(&client, PIPELINE.id).await;
    })
    .await;
    drop(moto);
}

/// The form's cache limit is kept (every bucket's, in the cache's `settings.json`) and shown as
/// the limit now the next time; "Empty this bucket's cache first" fetches the open bucket again:
/// what its folder held that the bucket does not is gone, its session fetched anew.
#[tokio::test]
async fn the_form_sets_the_cache_limit_and_empties_the_open_buckets_cache() {
    let moto = Moto::start();
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::empty();
    let url = format!("s3://{BUCKET}/ci");
    let sources = here.data_home().join("cache/zibby-studio/sources");
    let typed_url = url.clone();
    run_with_bucket(&moto, &here, &url, |client| async move {
        row_appears(&client, PIPELINE.id).await;
        let mirror = std::fs::read_dir(&sources)
            .expect("the cache's sources")
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .find(|path| {
                path.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("s3-team-runs-"))
            })
            .expect("the bucket's folder in the cache");
        let session = mirror.join("workspace/.zibby/output/sessions").join(PIPELINE.id);
        let stray = session.join("stray.txt");
        std::fs::write(&stray, "not the bucket's").expect("write into the mirror");

        let open_form = || async {
            click(&client, "#workspace-switcher").await;
            wait_for(&client, "#workspace-open-cloud").await;
            click(&client, "#workspace-open-cloud").await;
        };
        let placeholder = |expected: &'static str| {
            let client = client.clone();
            async move {
                eventually(&format!("the limit field says {expected}"), || async {
                    let field = wait_for(&client, "#cloud-cache-limit").await;
                    let said = field.attr("placeholder").await.map_err(|e| e.to_string())?;
                    (said.as_deref() == Some(expected))
                        .then_some(())
                        .ok_or(format!("{said:?}"))
                })
                .await;
            }
        };
        open_form().await;
        placeholder("2G now").await;
        let field = wait_for(&client, "#cloud-url").await;
        field.clear().await.expect("clear the field");
        field.send_keys(&typed_url).await.expect("type the URL");
        let limit = wait_for(&client, "#cloud-cache-limit").await;
        limit.send_keys("500M").await.expect("type the limit");
        click(&client, "#cloud-clear-cache").await;
        screenshot(&client, "cloud-form-cache.png").await;
        click(&client, "#cloud-open").await;

        eventually(
            "the bucket's folder was emptied and its session fetched again",
            || async {
                (!stray.exists() && session.join(".session-info.json").is_file())
                    .then_some(())
                    .ok_or(format!("{stray:?} still there, or the session not fetched again"))
            },
        )
        .await;
        row_appears(&client, PIPELINE.id).await;
        wait_for(&client, "#workspace-read-only").await;
        let settings = std::fs::read_to_string(sources.join("settings.json")).expect("the cache's settings");
        assert!(settings.contains(&(500u64 << 20).to_string()), "{settings}");

        open_form().await;
        placeholder("500M now").await;
    })
    .await;
}

/// `zibby-studio --session ID s3://…` while the app runs on the same store: the running window
/// opens the bucket, then that session of it.
#[tokio::test]
async fn a_second_launch_hands_its_bucket_prefix_to_the_running_window() {
    let moto = Moto::start();
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::with_sessions(&[FANOUT]);
    let second_env = bucket_env(&moto, &here);
    let here_path = here.path().display().to_string();
    let (db, data_home) = (here.db(), here.data_home().to_path_buf());
    let url = format!("s3://{BUCKET}/ci");
    let start_path = here_path.clone();
    run_with_bucket(&moto, &here, &start_path, |client| async move {
        row_appears(&client, FANOUT.id).await;
        let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_zibby-studio"))
            .arg("--db")
            .arg(&db)
            .args(["--session", PIPELINE.id])
            .arg(&url)
            .env("XDG_DATA_HOME", &data_home)
            .env("XDG_CONFIG_HOME", data_home.join("config"))
            .envs(second_env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let status = tokio::time::timeout(std::time::Duration::from_secs(60), status)
            .await
            .expect("the second launch exits within 60 s: it handed over")
            .expect("launch the app again");
        assert!(status.success(), "the second launch exits cleanly: {status}");
        eventually("the running window opens the bucket prefix", || async {
            let seen = text_of(&client, "#workspace-cloud").await?;
            (seen == url).then_some(()).ok_or(seen)
        })
        .await;
        row_appears(&client, PIPELINE.id).await;
        // `--session` (what `zstudio --source URL open ID` starts): that session of the bucket.
        let view = format!("#session-view[data-session-id='{}']", PIPELINE.id);
        wait_for(&client, &view).await;

        // Back to the folder, then to the bucket again from the menu's recent list: a URL opened
        // before is known, so not asked about.
        click(&client, "#workspace-switcher").await;
        click(&client, &format!(".recent-workspace[data-path='{here_path}']")).await;
        row_appears(&client, FANOUT.id).await;
        assert!(client.find(Locator::Css("#workspace-read-only")).await.is_err());
        click(&client, "#workspace-switcher").await;
        click(&client, &format!(".recent-workspace[data-path='{url}']")).await;
        wait_for(&client, "#workspace-read-only").await;
        row_appears(&client, PIPELINE.id).await;
    })
    .await;
    drop(moto);
}

/// Waits up to `seconds` (longer than the page timeout: a stalled server is given up on after
/// the mirror's own timeout) until `check` is `Ok`.
async fn within<F, Fut>(seconds: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        match check().await {
            Ok(()) => return,
            Err(last) if std::time::Instant::now() >= deadline => {
                panic!("{what}: not so within {seconds} s; last seen: {last}")
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(250)).await,
        }
    }
}

/// The notice above the table says the server at `url` gave no answer (a refresh given up after
/// the mirror's timeout), and the sessions are still shown as last fetched.
async fn no_answer_is_said(client: &Client, url: &str) {
    within(120, "the notice names the source", || async {
        let notice = text_of(client, "#cloud-refresh-failed").await?;
        (notice.contains(url) && notice.contains("no answer"))
            .then_some(())
            .ok_or(notice)
    })
    .await;
    wait_for(client, &format!("tr[data-session-id='{}']", PIPELINE.id)).await;
}

/// The refresh-failed notice goes (a refresh worked again).
async fn the_notice_goes(client: &Client) {
    within(120, "the notice goes once a refresh works", || async {
        match client.find(Locator::Css("#cloud-refresh-failed")).await {
            Ok(_) => Err("still shown".to_owned()),
            Err(_) => Ok(()),
        }
    })
    .await;
}

/// The server stalls while the window is open: the workspace says its refresh fails, naming the
/// source, and shows the sessions as last fetched; once the server answers again, the notice goes.
#[tokio::test]
async fn a_stalled_server_is_said_on_the_workspace_until_a_refresh_works_again() {
    let moto = std::sync::Arc::new(Moto::start());
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::empty();
    let url = format!("s3://{BUCKET}/ci");
    let (server, expected_url) = (moto.clone(), url.clone());
    run_with_bucket(&moto, &here, &url, |client| async move {
        row_appears(&client, PIPELINE.id).await;
        assert!(client.find(Locator::Css("#cloud-refresh-failed")).await.is_err());
        server.freeze();
        // The poller's next refresh gets no answer: given up on after the mirror's timeout.
        no_answer_is_said(&client, &expected_url).await;
        screenshot(&client, "cloud-refresh-failed.png").await;
        server.resume();
        the_notice_goes(&client).await;
    })
    .await;
    moto.resume();
}

/// A bucket opened before opens from its mirror at once, even with the server frozen: the
/// sessions as last fetched, "checking…" beside the label while the poller asks the bucket; once
/// that refresh gives up, the notice names the source, and it goes once the server answers.
#[tokio::test]
async fn a_bucket_opened_before_opens_at_once_from_its_mirror_while_the_server_stalls() {
    let moto = std::sync::Arc::new(Moto::start());
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::with_sessions(&[FANOUT]);
    let here_path = here.path().display().to_string();
    let start_path = here_path.clone();
    let url = format!("s3://{BUCKET}/ci");
    here.opened_before(&[&url]);
    let server = moto.clone();
    run_with_bucket(&moto, &here, &start_path, |client| async move {
        row_appears(&client, FANOUT.id).await;
        // The first opening lists the bucket (a cold mirror), fetches it, and is then current.
        click(&client, "#workspace-switcher").await;
        click(&client, "#workspace-open-cloud").await;
        let field = wait_for(&client, "#cloud-url").await;
        field.send_keys(&url).await.expect("type the URL");
        click(&client, "#cloud-open").await;
        wait_for(&client, "#workspace-read-only").await;
        row_appears(&client, PIPELINE.id).await;
        within(30, "the first check is done", || async {
            match client.find(Locator::Css("#workspace-cloud-checking")).await {
                Ok(_) => Err("still checking".to_owned()),
                Err(_) => Ok(()),
            }
        })
        .await;

        click(&client, "#workspace-switcher").await;
        click(&client, &format!(".recent-workspace[data-path='{here_path}']")).await;
        row_appears(&client, FANOUT.id).await;
        server.freeze();
        click(&client, "#workspace-switcher").await;
        click(&client, &format!(".recent-workspace[data-path='{url}']")).await;
        // Open at once on the mirror, though the server answers nothing (a refresh gives up after
        // the mirror's 30 s timeout).
        wait_for(&client, "#workspace-read-only").await;
        row_appears(&client, PIPELINE.id).await;
        eventually("the label says the listing is being checked", || async {
            text_of(&client, "#workspace-cloud-checking")
                .await
                .and_then(|said| (said == "checking…").then_some(()).ok_or(said))
        })
        .await;
        screenshot(&client, "cloud-checking.png").await;
        no_answer_is_said(&client, &url).await;
        assert!(client.find(Locator::Css("#workspace-cloud-checking")).await.is_err());
        server.resume();
        the_notice_goes(&client).await;
    })
    .await;
    moto.resume();
}

/// "Import to local workspace" on a cloud session: copied into the local workspace opened last
/// and its store; that workspace lists it as its own.
#[tokio::test]
async fn a_cloud_session_is_imported_into_the_local_workspace_opened_last() {
    let moto = Moto::start();
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::with_sessions(&[FANOUT]);
    here.opened_before(&[format!("s3://{BUCKET}/ci")]);
    let here_path = here.path().display().to_string();
    let start_path = here_path.clone();
    let imported_folder = here.path().join(".zibby/output/sessions").join(PIPELINE.id);
    run_with_bucket(&moto, &here, &start_path, |client| async move {
        row_appears(&client, FANOUT.id).await;
        click(&client, "#workspace-switcher").await;
        click(&client, "#workspace-open-cloud").await;
        let field = wait_for(&client, "#cloud-url").await;
        field
            .send_keys(&format!("s3://{BUCKET}/ci"))
            .await
            .expect("type the URL");
        click(&client, "#cloud-open").await;
        wait_for(&client, "#workspace-read-only").await;
        row_appears(&client, PIPELINE.id).await;
        click(&client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        click(&client, "#session-import-cloud").await;
        eventually("the window says where the session went", || async {
            let said = match text_of(&client, "#session-imported").await {
                Ok(said) => said,
                Err(_) => return Err(text_of(&client, "#session-view").await.unwrap_or_default()),
            };
            (said.contains(&here_path) && said.contains(PIPELINE.id))
                .then_some(())
                .ok_or(said)
        })
        .await;
        screenshot(&client, "cloud-session-imported.png").await;
        assert!(
            imported_folder.join("plan/raw_stream_output.txt").is_file(),
            "the session's folder is in the local workspace"
        );

        // The local workspace lists it as its own: writable, with Delete.
        click(&client, "#session-close").await;
        click(&client, "#workspace-switcher").await;
        click(&client, &format!(".recent-workspace[data-path='{here_path}']")).await;
        row_appears(&client, FANOUT.id).await;
        row_appears(&client, PIPELINE.id).await;
        assert!(client.find(Locator::Css("#workspace-read-only")).await.is_err());
    })
    .await;
    drop(moto);
}

/// What a bucket's session printed is found by the window's search box (a `file` hit: the
/// mirror's node output file), and the hit opens that session's Files tab at the file.
#[tokio::test]
async fn the_search_box_finds_what_a_bucket_session_printed_and_opens_its_file() {
    let moto = Moto::start();
    upload(&moto, &[PIPELINE], true);
    let here = Workspace::empty();
    let url = format!("s3://{BUCKET}/ci");
    run_with_bucket(&moto, &here, &url, |client| async move {
        row_appears(&client, PIPELINE.id).await;
        let search = wait_for(&client, "#search").await;
        search.send_keys("run the tests").await.expect("type the query");
        let hit = format!(".search-hit[data-session-id='{}'][data-kind='file']", PIPELINE.id);
        wait_for(&client, &hit).await;
        eventually("one hit, the plan's output file", || async {
            let hits = client
                .find_all(Locator::Css(".search-hit"))
                .await
                .map_err(|e| e.to_string())?;
            let place = text_of(&client, &format!("{hit} .search-node")).await?;
            (hits.len() == 1 && place == "plan/raw_stream_output.txt")
                .then_some(())
                .ok_or(format!("{} hits, {place}", hits.len()))
        })
        .await;
        screenshot(&client, "cloud-search-file-hit.png").await;

        click(&client, &hit).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        eventually("the Files tab shows the file the hit is in", || async {
            let viewer = client
                .find(Locator::Css("#file-viewer"))
                .await
                .map_err(|e| e.to_string())?;
            let path = viewer.attr("data-path").await.map_err(|e| e.to_string())?;
            let text = viewer.text().await.map_err(|e| e.to_string())?;
            (path.as_deref() == Some("plan/raw_stream_output.txt") && text.contains("Run the tests"))
                .then_some(())
                .ok_or(format!("{path:?}: {text}"))
        })
        .await;
        screenshot(&client, "cloud-search-file-opened.png").await;
    })
    .await;
    drop(moto);
}

/// A bucket never opened before shows every session at once: with the server frozen as soon as
/// the workspace is open (its ids listed, a thousand sessions not fetched in that time), the rows
/// not fetched say "fetching…" rather than a status; once the server answers, the first check
/// fetches them all and no row says it any more.
#[tokio::test]
async fn a_bucket_never_opened_lists_every_session_at_once_then_fetches_them() {
    let moto = std::sync::Arc::new(Moto::start());
    let count = 1_000;
    let generated = Workspace::with_generated_sessions(count);
    let sessions_dir = generated.path().join(".zibby/output/sessions");
    let mut objects = Vec::new();
    for i in 0..count {
        let id = crate::harness::generated_session_id(i);
        for file in [".session-info.json", "result.json"] {
            let text = std::fs::read_to_string(sessions_dir.join(&id).join(file)).expect("a generated file");
            objects.push(json!([format!("ci/{id}/{file}"), text]));
        }
        objects.push(json!([format!("ci/{id}/.upload-complete"), ""]));
    }
    moto.upload(BUCKET, true, json!([{ "bulk": objects }]));
    let here = Workspace::empty();
    let url = format!("s3://{BUCKET}/ci");
    let server = moto.clone();
    run_with_bucket(&moto, &here, &url, |client| async move {
        wait_for(&client, "#workspace-read-only").await;
        server.freeze();
        eventually("a row says its session is being fetched", || async {
            crate::harness::scroll_table_to_the_end(&client).await;
            text_of(&client, "tr[data-session-id] [data-status='fetching']")
                .await
                .and_then(|said| (said.to_lowercase() == "fetching…").then_some(()).ok_or(said))
        })
        .await;
        let label = text_of(&client, ".sessions-head .count").await.unwrap_or_default();
        assert!(label.contains("1,000"), "every session a row: {label}");
        screenshot(&client, "cloud-fetching.png").await;
        server.resume();
        within(
            180,
            "every session is fetched, the last rows read as their folders say",
            || async {
                crate::harness::scroll_table_to_the_end(&client).await;
                let mut said = Vec::new();
                for badge in client
                    .find_all(Locator::Css("tr[data-session-id] td.status .badge"))
                    .await
                    .map_err(|e| e.to_string())?
                {
                    said.push(
                        badge
                            .attr("data-status")
                            .await
                            .map_err(|e| e.to_string())?
                            .unwrap_or_default(),
                    );
                }
                (!said.is_empty() && said.iter().all(|status| status == "success"))
                    .then_some(())
                    .ok_or(format!("{said:?}"))
            },
        )
        .await;
        let label = text_of(&client, ".sessions-head .count").await.unwrap_or_default();
        assert!(label.contains("1,000"), "the same sessions, none twice: {label}");
    })
    .await;
    moto.resume();
}
