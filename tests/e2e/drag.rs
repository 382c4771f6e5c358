//! A drag source, as a file manager is one: files dragged onto a window and dropped there, over
//! the XDND protocol (freedesktop.org's "Drag-and-Drop Protocol for the X Window System",
//! version 5). WebDriver cannot drag from outside the page, and XTEST alone moves a pointer that
//! drags nothing: this client owns `XdndSelection`, offers `text/uri-list`, and speaks to the
//! window (GTK, which hands the drop to the web view) as a file manager would.

#![allow(unsafe_code)] // Xlib is a C API.

use std::ffi::{CStr, CString};
use std::path::Path;
use std::time::{Duration, Instant};

use x11_dl::xlib;

use crate::x11::{top_level_window, window_property, with_display};

/// The XDND version this source speaks.
const XDND_VERSION: u32 = 5;
/// How long the window may take to answer one step of the drag.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Drags `paths` (as `file://` URIs) from outside onto the middle of the top-level window whose
/// title contains `title_part`, and drops them there once the window accepts them. Returns when
/// the window says it finished with the drop (`XdndFinished`), or why it did not.
pub fn drop_files(title_part: &str, paths: &[&Path]) -> Result<(), String> {
    let uri_list: String = paths
        .iter()
        .map(|path| {
            url::Url::from_file_path(path)
                .map(|uri| format!("{uri}\r\n"))
                .map_err(|()| format!("{} is not an absolute path", path.display()))
        })
        .collect::<Result<_, _>>()?;
    with_display(|xlib, display| {
        let target = top_level_window(xlib, display, title_part)?;
        let mut drag = Drag::new(xlib, display, target, uri_list.into_bytes())?;
        let result = drag.run();
        drag.close();
        result
    })
}

/// The atoms of the protocol, interned once.
struct Atoms {
    aware: xlib::Atom,
    proxy: xlib::Atom,
    selection: xlib::Atom,
    enter: xlib::Atom,
    position: xlib::Atom,
    status: xlib::Atom,
    leave: xlib::Atom,
    drop: xlib::Atom,
    finished: xlib::Atom,
    action_copy: xlib::Atom,
    uri_list: xlib::Atom,
    targets: xlib::Atom,
}

impl Atoms {
    fn intern(xlib: &xlib::Xlib, display: *mut xlib::Display) -> Atoms {
        let atom = |name: &str| {
            let name = CString::new(name).expect("an atom name has no NUL");
            // SAFETY: an Xlib call on an open display with a NUL-terminated name.
            unsafe { (xlib.XInternAtom)(display, name.as_ptr(), xlib::False) }
        };
        Atoms {
            aware: atom("XdndAware"),
            proxy: atom("XdndProxy"),
            selection: atom("XdndSelection"),
            enter: atom("XdndEnter"),
            position: atom("XdndPosition"),
            status: atom("XdndStatus"),
            leave: atom("XdndLeave"),
            drop: atom("XdndDrop"),
            finished: atom("XdndFinished"),
            action_copy: atom("XdndActionCopy"),
            uri_list: atom("text/uri-list"),
            targets: atom("TARGETS"),
        }
    }
}

/// One drag in progress: the source's own (unmapped) window, the window dragged onto, and what
/// is dragged.
struct Drag<'x> {
    xlib: &'x xlib::Xlib,
    display: *mut xlib::Display,
    atoms: Atoms,
    source: xlib::Window,
    /// The window the messages go to (the target's `XdndProxy`, if it names one).
    target: xlib::Window,
    version: u32,
    /// Root coordinates of the point dragged to.
    at: (i32, i32),
    data: Vec<u8>,
    /// What the window asked for, by target name (for the error when the drop fails).
    requests: Vec<String>,
}

/// What the window said to the source.
enum Heard {
    Status { accepted: bool },
    Finished { accepted: bool },
}

impl<'x> Drag<'x> {
    fn new(
        xlib: &'x xlib::Xlib,
        display: *mut xlib::Display,
        window: xlib::Window,
        data: Vec<u8>,
    ) -> Result<Drag<'x>, String> {
        let atoms = Atoms::intern(xlib, display);
        let version = first_item(xlib, display, window, atoms.aware)
            .ok_or("the window takes no drops: it has no XdndAware property")?;
        let target = first_item(xlib, display, window, atoms.proxy).map_or(window, |proxy| proxy as _);
        // SAFETY: Xlib calls on an open display; the attributes are a plain struct Xlib fills.
        let (source, at) = unsafe {
            let root = (xlib.XDefaultRootWindow)(display);
            let mut attributes: xlib::XWindowAttributes = std::mem::zeroed();
            if (xlib.XGetWindowAttributes)(display, window, &mut attributes) == 0 {
                return Err("the window went before the drag".into());
            }
            let (mut x, mut y, mut child) = (0, 0, 0);
            (xlib.XTranslateCoordinates)(
                display,
                window,
                root,
                attributes.width / 2,
                attributes.height / 2,
                &mut x,
                &mut y,
                &mut child,
            );
            let source = (xlib.XCreateSimpleWindow)(display, root, -10, -10, 1, 1, 0, 0, 0);
            (xlib.XSetSelectionOwner)(display, atoms.selection, source, xlib::CurrentTime);
            (source, (x, y))
        };
        Ok(Drag {
            xlib,
            display,
            atoms,
            source,
            target,
            version: (version as u32).min(XDND_VERSION),
            at,
            data,
            requests: Vec::new(),
        })
    }

    /// Enter, move until the window accepts, drop, and wait for it to finish.
    fn run(&mut self) -> Result<(), String> {
        if self.version < 3 {
            return Err(format!("the window speaks XDND version {}, older than 3", self.version));
        }
        self.send(
            self.atoms.enter,
            [
                self.source as _,
                (self.version << 24) as _,
                self.atoms.uri_list as _,
                0,
                0,
            ],
        );
        // A window that wants the data before it answers (WebKit does) says no at first: the
        // pointer moves on (one pixel, as a hand does) until it says yes.
        let deadline = Instant::now() + STEP_TIMEOUT;
        let mut accepted = false;
        let mut step = 0;
        while !accepted {
            if Instant::now() > deadline {
                self.send(self.atoms.leave, [self.source as _, 0, 0, 0, 0]);
                return Err(format!(
                    "the window did not accept the drop (it asked for {:?})",
                    self.requests
                ));
            }
            let (x, y) = (self.at.0 + step % 2, self.at.1);
            step += 1;
            self.send(
                self.atoms.position,
                [
                    self.source as _,
                    0,
                    ((x << 16) | (y & 0xffff)) as _,
                    xlib::CurrentTime as _,
                    self.atoms.action_copy as _,
                ],
            );
            match self.wait(Duration::from_millis(500))? {
                Some(Heard::Status { accepted: yes }) => accepted = yes,
                Some(Heard::Finished { .. }) => return Err("the window finished a drop it was not given".into()),
                None => {}
            }
            if !accepted {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.send(self.atoms.drop, [self.source as _, 0, xlib::CurrentTime as _, 0, 0]);
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "the window did not finish the drop (it asked for {:?})",
                    self.requests
                ));
            }
            match self.wait(left)? {
                Some(Heard::Finished { accepted: true }) => return Ok(()),
                Some(Heard::Finished { accepted: false }) => return Err("the window refused the drop".into()),
                Some(Heard::Status { .. }) | None => {}
            }
        }
    }

    /// A client message of the protocol to the target window.
    fn send(&self, message_type: xlib::Atom, longs: [std::os::raw::c_long; 5]) {
        let mut data = xlib::ClientMessageData::new();
        for (i, long) in longs.into_iter().enumerate() {
            data.set_long(i, long);
        }
        let mut event = xlib::XEvent {
            client_message: xlib::XClientMessageEvent {
                type_: xlib::ClientMessage,
                serial: 0,
                send_event: xlib::True,
                display: self.display,
                window: self.target,
                message_type,
                format: 32,
                data,
            },
        };
        // SAFETY: Xlib calls on an open display; the event is a plain struct.
        unsafe {
            (self.xlib.XSendEvent)(self.display, self.target, xlib::False, xlib::NoEventMask, &mut event);
            (self.xlib.XFlush)(self.display);
        }
    }

    /// Serves the window's requests for the data until it says something to the source, or
    /// `timeout` passes.
    fn wait(&mut self, timeout: Duration) -> Result<Option<Heard>, String> {
        let deadline = Instant::now() + timeout;
        loop {
            // SAFETY: Xlib calls on an open display; the event is read as the kind its type says.
            unsafe {
                while (self.xlib.XPending)(self.display) > 0 {
                    let mut event: xlib::XEvent = std::mem::zeroed();
                    (self.xlib.XNextEvent)(self.display, &mut event);
                    match event.get_type() {
                        xlib::SelectionRequest => self.answer(&event.selection_request),
                        xlib::ClientMessage => {
                            let message = event.client_message;
                            let accepted = message.data.get_long(1) & 1 == 1;
                            if message.message_type == self.atoms.status {
                                return Ok(Some(Heard::Status { accepted }));
                            }
                            if message.message_type == self.atoms.finished {
                                // Version 5 says whether it took the drop; before, finishing is taking.
                                return Ok(Some(Heard::Finished {
                                    accepted: accepted || self.version < 5,
                                }));
                            }
                        }
                        _ => {}
                    }
                }
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Answers a request for the dragged data: `text/uri-list` (and the list of targets), put on
    /// the requestor's property; anything else refused.
    fn answer(&mut self, request: &xlib::XSelectionRequestEvent) {
        let property = if request.property == 0 {
            request.target
        } else {
            request.property
        };
        self.requests.push(atom_name(self.xlib, self.display, request.target));
        // SAFETY: Xlib calls on an open display, with data that outlives them.
        let answered = unsafe {
            if request.selection != self.atoms.selection {
                0
            } else if request.target == self.atoms.uri_list {
                (self.xlib.XChangeProperty)(
                    self.display,
                    request.requestor,
                    property,
                    self.atoms.uri_list,
                    8,
                    xlib::PropModeReplace,
                    self.data.as_ptr(),
                    self.data.len() as _,
                );
                property
            } else if request.target == self.atoms.targets {
                let targets = [self.atoms.targets, self.atoms.uri_list];
                (self.xlib.XChangeProperty)(
                    self.display,
                    request.requestor,
                    property,
                    xlib::XA_ATOM,
                    32,
                    xlib::PropModeReplace,
                    targets.as_ptr().cast(),
                    targets.len() as _,
                );
                property
            } else {
                0
            }
        };
        let mut notify = xlib::XEvent {
            selection: xlib::XSelectionEvent {
                type_: xlib::SelectionNotify,
                serial: 0,
                send_event: xlib::True,
                display: self.display,
                requestor: request.requestor,
                selection: request.selection,
                target: request.target,
                property: answered,
                time: request.time,
            },
        };
        // SAFETY: Xlib calls on an open display; the event is a plain struct.
        unsafe {
            (self.xlib.XSendEvent)(
                self.display,
                request.requestor,
                xlib::False,
                xlib::NoEventMask,
                &mut notify,
            );
            (self.xlib.XFlush)(self.display);
        }
    }

    /// Gives up the selection and the source window.
    fn close(&self) {
        // SAFETY: Xlib calls on an open display, on the window this drag made.
        unsafe {
            (self.xlib.XSetSelectionOwner)(self.display, self.atoms.selection, 0, xlib::CurrentTime);
            (self.xlib.XDestroyWindow)(self.display, self.source);
        }
    }
}

/// The first 32-bit item of `window`'s property `property` (`XdndAware`'s version,
/// `XdndProxy`'s window), if it has one.
fn first_item(
    xlib: &xlib::Xlib,
    display: *mut xlib::Display,
    window: xlib::Window,
    property: xlib::Atom,
) -> Option<u64> {
    let property = window_property(xlib, display, window, property, false)?;
    let long = std::mem::size_of::<std::os::raw::c_ulong>();
    (property.format == 32 && property.bytes.len() >= long).then(|| {
        let mut first = [0u8; 8];
        first[..long].copy_from_slice(&property.bytes[..long]);
        u64::from_ne_bytes(first)
    })
}

fn atom_name(xlib: &xlib::Xlib, display: *mut xlib::Display, atom: xlib::Atom) -> String {
    // SAFETY: an Xlib call on an open display; the name is freed with XFree.
    unsafe {
        let name = (xlib.XGetAtomName)(display, atom);
        if name.is_null() {
            return format!("atom {atom}");
        }
        let text = CStr::from_ptr(name).to_string_lossy().into_owned();
        (xlib.XFree)(name.cast());
        text
    }
}
