//! What a window manager does, done by the tests themselves (Xvfb runs none), through Xlib:
//! asking a window to close (a `WM_DELETE_WINDOW` message, so that the app sees a close request it
//! may answer; WebDriver's Close Window destroys the page instead), and moving the keyboard focus.
//! And what a keyboard does, through XTEST, where WebDriver cannot reach: the menu's accelerators
//! and the system's file dialogs.

#![allow(unsafe_code)] // Xlib is a C API.

use std::ffi::{CStr, CString};
use std::ptr;

use x11_dl::{xlib, xtest};

/// Sends `WM_DELETE_WINDOW` to the top-level window whose title contains `title_part`.
pub fn ask_to_close(title_part: &str) -> Result<(), String> {
    with_display(|xlib, display| {
        let window = top_level_window(xlib, display, title_part)?;
        let protocols = CString::new("WM_PROTOCOLS").unwrap();
        let delete = CString::new("WM_DELETE_WINDOW").unwrap();
        // SAFETY: Xlib calls on the display `with_display` opened; the event is a plain struct.
        unsafe {
            let mut message = xlib::XClientMessageEvent {
                type_: xlib::ClientMessage,
                serial: 0,
                send_event: xlib::True,
                display,
                window,
                message_type: (xlib.XInternAtom)(display, protocols.as_ptr(), xlib::False),
                format: 32,
                data: xlib::ClientMessageData::new(),
            };
            message
                .data
                .set_long(0, (xlib.XInternAtom)(display, delete.as_ptr(), xlib::False) as _);
            message.data.set_long(1, xlib::CurrentTime as _);
            let mut event = xlib::XEvent {
                client_message: message,
            };
            (xlib.XSendEvent)(display, window, xlib::False, xlib::NoEventMask, &mut event);
        }
        Ok(())
    })
}

/// Gives the keyboard focus to the top-level window whose title contains `title_part`, or with
/// `None` to no window at all, as when the user works in another app. (Not to the root window:
/// GTK counts a root focus as the focus of the window under the pointer.)
pub fn focus(title_part: Option<&str>) -> Result<(), String> {
    with_display(|xlib, display| {
        let (window, revert) = match title_part {
            Some(part) => (top_level_window(xlib, display, part)?, xlib::RevertToParent),
            None => (0, xlib::RevertToNone),
        };
        // SAFETY: an Xlib call on the display `with_display` opened.
        unsafe {
            (xlib.XSetInputFocus)(display, window, revert, xlib::CurrentTime);
        }
        Ok(())
    })
}

/// Whether a top-level window whose title contains `title_part` is up.
pub fn has_window(title_part: &str) -> bool {
    with_display(|xlib, display| top_level_window(xlib, display, title_part)).is_ok()
}

/// Whether the keyboard focus is in the top-level window whose title contains `title_part` (on
/// it or on a window inside it).
pub fn has_focus(title_part: &str) -> bool {
    with_display(|xlib, display| {
        let wanted = top_level_window(xlib, display, title_part)?;
        // SAFETY: Xlib calls on an open display; the children list is freed with XFree.
        unsafe {
            let root = (xlib.XDefaultRootWindow)(display);
            let (mut window, mut revert) = (0, 0);
            (xlib.XGetInputFocus)(display, &mut window, &mut revert);
            // Up from the focused window to the top-level one.
            while window != 0 && window != xlib::PointerRoot as xlib::Window && window != root {
                if window == wanted {
                    return Ok(());
                }
                let (mut root_out, mut parent, mut children, mut count) = (0, 0, ptr::null_mut(), 0);
                if (xlib.XQueryTree)(display, window, &mut root_out, &mut parent, &mut children, &mut count) == 0 {
                    break;
                }
                if !children.is_null() {
                    (xlib.XFree)(children.cast());
                }
                window = parent;
            }
            Err(format!("the focus is not in `{title_part}`"))
        }
    })
    .is_ok()
}

/// The text the clipboard holds (its `CLIPBOARD` selection, as UTF-8), asked of whoever owns it.
pub fn clipboard_text() -> Result<String, String> {
    with_display(|xlib, display| {
        let atom = |name: &str| {
            let name = CString::new(name).unwrap();
            // SAFETY: an Xlib call on an open display with a NUL-terminated name.
            unsafe { (xlib.XInternAtom)(display, name.as_ptr(), xlib::False) }
        };
        let (clipboard, utf8, property) = (atom("CLIPBOARD"), atom("UTF8_STRING"), atom("ZIBBY_E2E_CLIPBOARD"));
        // SAFETY: Xlib calls on an open display, on a window made here and destroyed before the
        // end; the property's value is freed with XFree.
        unsafe {
            let root = (xlib.XDefaultRootWindow)(display);
            let requestor = (xlib.XCreateSimpleWindow)(display, root, -10, -10, 1, 1, 0, 0, 0);
            (xlib.XConvertSelection)(display, clipboard, utf8, property, requestor, xlib::CurrentTime);
            (xlib.XFlush)(display);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
            let mut answered = None;
            while answered.is_none() && std::time::Instant::now() < deadline {
                while (xlib.XPending)(display) > 0 {
                    let mut event: xlib::XEvent = std::mem::zeroed();
                    (xlib.XNextEvent)(display, &mut event);
                    if event.get_type() == xlib::SelectionNotify {
                        answered = Some(event.selection.property);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let text = match answered {
                None => Err("nobody answered for the clipboard".to_owned()),
                Some(0) => Err("the clipboard holds no text".to_owned()),
                Some(_) => match window_property(xlib, display, requestor, property, true) {
                    None => Err("the clipboard's text did not come".to_owned()),
                    Some(property) => String::from_utf8(property.bytes).map_err(|e| e.to_string()),
                },
            };
            (xlib.XDestroyWindow)(display, requestor);
            text
        }
    })
}

/// Presses a chord on the keyboard, as a user would: key names as Xlib spells their keysyms,
/// joined by `+` (`Control_L+i`, `Return`), pressed in order and released in reverse.
pub fn press(chord: &str) -> Result<(), String> {
    with_keyboard(|xlib, xtst, display| {
        let mut codes = Vec::new();
        for name in chord.split('+') {
            let name_c = CString::new(name).map_err(|e| e.to_string())?;
            // SAFETY: Xlib calls on an open display with a NUL-terminated name.
            let code = unsafe { (xlib.XKeysymToKeycode)(display, (xlib.XStringToKeysym)(name_c.as_ptr())) };
            if code == 0 {
                return Err(format!("no key for `{name}` on this keyboard"));
            }
            codes.push(code);
        }
        // SAFETY: XTEST calls on an open display.
        unsafe {
            for &code in &codes {
                (xtst.XTestFakeKeyEvent)(display, code.into(), xlib::True, 0);
            }
            for &code in codes.iter().rev() {
                (xtst.XTestFakeKeyEvent)(display, code.into(), xlib::False, 0);
            }
        }
        Ok(())
    })
}

/// Types `text` (printable ASCII) on the keyboard, with Shift where a character needs it.
pub fn type_text(text: &str) -> Result<(), String> {
    with_keyboard(|xlib, xtst, display| {
        let shift_name = CString::new("Shift_L").unwrap();
        // SAFETY: Xlib calls on an open display with NUL-terminated names.
        let shift = unsafe { (xlib.XKeysymToKeycode)(display, (xlib.XStringToKeysym)(shift_name.as_ptr())) };
        for character in text.chars() {
            if !(' '..='~').contains(&character) {
                return Err(format!("cannot type {character:?}"));
            }
            // Printable ASCII characters are their own keysyms.
            let keysym = character as xlib::KeySym;
            // SAFETY: XTEST and Xlib calls on an open display.
            unsafe {
                let code = (xlib.XKeysymToKeycode)(display, keysym);
                if code == 0 {
                    return Err(format!("no key types {character:?}"));
                }
                let shifted = (xlib.XKeycodeToKeysym)(display, code, 0) != keysym;
                if shifted {
                    (xtst.XTestFakeKeyEvent)(display, shift.into(), xlib::True, 0);
                }
                (xtst.XTestFakeKeyEvent)(display, code.into(), xlib::True, 0);
                (xtst.XTestFakeKeyEvent)(display, code.into(), xlib::False, 0);
                if shifted {
                    (xtst.XTestFakeKeyEvent)(display, shift.into(), xlib::False, 0);
                }
                (xlib.XSync)(display, xlib::False);
            }
        }
        Ok(())
    })
}

/// A window's property, as Xlib gives it.
pub struct Property {
    /// 8, 16 or 32: the size of its items in bits.
    pub format: i32,
    /// Its items' bytes; Xlib gives format-32 items as C longs.
    pub bytes: Vec<u8>,
}

/// `window`'s property `property` (up to 256 KiB of it), if it has one; `delete` takes it off
/// the window as it is read (as a selection's requestor does).
pub fn window_property(
    xlib: &xlib::Xlib,
    display: *mut xlib::Display,
    window: xlib::Window,
    property: xlib::Atom,
    delete: bool,
) -> Option<Property> {
    // SAFETY: an Xlib call on an open display; what it returns is checked, copied and freed with
    // XFree.
    unsafe {
        let (mut kind, mut format, mut items, mut after, mut value) = (0, 0, 0, 0, ptr::null_mut());
        let status = (xlib.XGetWindowProperty)(
            display,
            window,
            property,
            0,
            1 << 16,
            if delete { xlib::True } else { xlib::False },
            xlib::AnyPropertyType as _,
            &mut kind,
            &mut format,
            &mut items,
            &mut after,
            &mut value,
        );
        if value.is_null() {
            return None;
        }
        let item_bytes = match format {
            32 => std::mem::size_of::<std::os::raw::c_long>(),
            16 => 2,
            _ => 1,
        };
        let bytes = std::slice::from_raw_parts(value, items as usize * item_bytes).to_vec();
        (xlib.XFree)(value.cast());
        (status == xlib::Success as i32).then_some(Property { format, bytes })
    }
}

/// [`with_display`] with XTEST loaded (`libXtst`).
fn with_keyboard(
    act: impl FnOnce(&xlib::Xlib, &xtest::Xf86vmode, *mut xlib::Display) -> Result<(), String>,
) -> Result<(), String> {
    let xtst = xtest::Xf86vmode::open().map_err(|e| format!("no XTEST library (libXtst): {e}"))?;
    with_display(|xlib, display| act(xlib, &xtst, display))
}

/// The last X error's code, as [`record_error`] heard it (0: none).
static LAST_ERROR: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Xlib's default error handler ends the process (a window gone or not yet shown between two
/// calls is a `BadWindow` or `BadMatch`): this one records the error, which [`with_display`]
/// returns.
extern "C" fn record_error(_: *mut xlib::Display, event: *mut xlib::XErrorEvent) -> std::os::raw::c_int {
    // SAFETY: Xlib passes a valid event.
    let code = unsafe { (*event).error_code };
    LAST_ERROR.store(code.max(1), std::sync::atomic::Ordering::SeqCst);
    0
}

/// Runs `act` on the display of `DISPLAY`, then syncs and closes it; an X error `act` caused is
/// returned as an error, never the end of the process.
pub fn with_display<T>(act: impl FnOnce(&xlib::Xlib, *mut xlib::Display) -> Result<T, String>) -> Result<T, String> {
    let xlib = xlib::Xlib::open().map_err(|e| format!("no Xlib: {e}"))?;
    // SAFETY: the display is opened here, checked for null, and closed after `act`.
    unsafe {
        (xlib.XSetErrorHandler)(Some(record_error));
        let display = (xlib.XOpenDisplay)(ptr::null());
        if display.is_null() {
            return Err("cannot open the X display (DISPLAY)".into());
        }
        LAST_ERROR.store(0, std::sync::atomic::Ordering::SeqCst);
        let result = act(&xlib, display);
        (xlib.XSync)(display, xlib::False);
        (xlib.XCloseDisplay)(display);
        match LAST_ERROR.swap(0, std::sync::atomic::Ordering::SeqCst) {
            0 => result,
            code => Err(format!("X error {code} (the window went or was not shown yet)")),
        }
    }
}

/// The top-level window shown whose title contains `title_part`.
pub fn top_level_window(
    xlib: &xlib::Xlib,
    display: *mut xlib::Display,
    title_part: &str,
) -> Result<xlib::Window, String> {
    // SAFETY: plain Xlib calls on an open display; every pointer Xlib returns is checked for null
    // and freed with XFree.
    unsafe {
        let root = (xlib.XDefaultRootWindow)(display);
        let (mut root_out, mut parent, mut children, mut count) = (0, 0, ptr::null_mut(), 0);
        (xlib.XQueryTree)(display, root, &mut root_out, &mut parent, &mut children, &mut count);
        let mut target = None;
        let mut titles = Vec::new();
        for i in 0..count as usize {
            let window = *children.add(i);
            let mut name = ptr::null_mut();
            if (xlib.XFetchName)(display, window, &mut name) != 0 && !name.is_null() {
                let title = CStr::from_ptr(name).to_string_lossy().into_owned();
                (xlib.XFree)(name.cast());
                // A window that is not shown (a dialog hidden after its answer, one not mapped
                // yet) cannot take the focus or a close request.
                let mut attributes: xlib::XWindowAttributes = std::mem::zeroed();
                let shown = (xlib.XGetWindowAttributes)(display, window, &mut attributes) != 0
                    && attributes.map_state == xlib::IsViewable;
                if title.contains(title_part) && shown {
                    target = Some(window);
                }
                titles.push(title);
            }
        }
        if !children.is_null() {
            (xlib.XFree)(children.cast());
        }
        target.ok_or_else(|| format!("no window titled with `{title_part}` among {titles:?}"))
    }
}
