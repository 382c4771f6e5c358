//! The app as ssh's askpass program: a remote workspace's ssh runs with `SSH_ASKPASS` set to this
//! binary (and `SSH_ASKPASS_REQUIRE=force`), and calls it with one argument, its prompt (a key's
//! passphrase, an unknown host key's yes/no). Then the app shows the prompt in a small native
//! dialog (GTK) and prints the answer for ssh on stdout; Cancel exits 1, which ssh takes as no.
//! No window, no store, nothing else of the app starts.

use std::ffi::OsString;
use std::path::Path;

/// The prompt when this process was started by ssh as its askpass program: one argument, and
/// `SSH_ASKPASS` naming this very binary with `SSH_ASKPASS_REQUIRE=force` (as
/// `remote::open_remote` sets them for ssh).
pub fn prompt(args: &[OsString]) -> Option<String> {
    let [prompt] = args else { return None };
    let forced = std::env::var_os("SSH_ASKPASS_REQUIRE").is_some_and(|value| value == "force");
    let askpass = std::env::var_os("SSH_ASKPASS")?;
    let this = std::env::current_exe().ok()?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    (forced && same(Path::new(&askpass), &this)).then(|| prompt.to_string_lossy().into_owned())
}

/// Asks `prompt` in a dialog, prints the answer and exits: 0 with an answer, 1 when cancelled
/// or when no dialog can be shown.
pub fn answer(prompt: &str) -> ! {
    match ask(prompt) {
        Some(answer) => {
            println!("{answer}");
            std::process::exit(0)
        }
        None => std::process::exit(1),
    }
}

/// The dialog: the prompt, a field (hidden for a passphrase, shown for a yes/no question), OK and
/// Cancel; Enter is OK.
fn ask(prompt: &str) -> Option<String> {
    use gtk::prelude::*;
    if let Err(error) = gtk::init() {
        eprintln!("zibby-studio: no dialog for ssh's question ({error}): {prompt}");
        return None;
    }
    let dialog = gtk::Dialog::with_buttons(
        Some(TITLE),
        None::<&gtk::Window>,
        gtk::DialogFlags::MODAL,
        &[("_Cancel", gtk::ResponseType::Cancel), ("_OK", gtk::ResponseType::Ok)],
    );
    dialog.set_default_response(gtk::ResponseType::Ok);
    let area = dialog.content_area();
    area.set_spacing(8);
    area.set_margin_start(12);
    area.set_margin_end(12);
    area.set_margin_top(12);
    let label = gtk::Label::new(Some(prompt));
    label.set_line_wrap(true);
    label.set_xalign(0.0);
    let entry = gtk::Entry::new();
    // A host key question is answered `yes` in the open; a passphrase is not shown.
    entry.set_visibility(prompt.contains("(yes/no"));
    entry.set_activates_default(true);
    area.pack_start(&label, false, false, 0);
    area.pack_start(&entry, false, false, 0);
    dialog.show_all();
    entry.grab_focus();
    let response = dialog.run();
    let text = entry.text().to_string();
    dialog.close();
    (response == gtk::ResponseType::Ok).then_some(text)
}

/// The dialog's title (the tests find the window by it).
pub const TITLE: &str = "Zibby Studio: ssh asks";
