//! What a window manager does, done by the tests themselves (Xvfb runs none), through Xlib:
//! asking a window to close (a `WM_DELETE_WINDOW` message, so that the app sees a close request it
//! may answer; WebDriver's Close Window destroys the page instead), and moving the keyboard focus.

#![allow(unsafe_code)] // Xlib is a C API.

use std::ffi::{CStr, CString};
use std::ptr;

use x11_dl::xlib;

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

/// Runs `act` on the display of `DISPLAY`, then flushes and closes it.
fn with_display<T>(act: impl FnOnce(&xlib::Xlib, *mut xlib::Display) -> Result<T, String>) -> Result<T, String> {
    let xlib = xlib::Xlib::open().map_err(|e| format!("no Xlib: {e}"))?;
    // SAFETY: the display is opened here, checked for null, and closed after `act`.
    unsafe {
        let display = (xlib.XOpenDisplay)(ptr::null());
        if display.is_null() {
            return Err("cannot open the X display (DISPLAY)".into());
        }
        let result = act(&xlib, display);
        (xlib.XFlush)(display);
        (xlib.XCloseDisplay)(display);
        result
    }
}

/// The top-level window whose title contains `title_part`.
fn top_level_window(xlib: &xlib::Xlib, display: *mut xlib::Display, title_part: &str) -> Result<xlib::Window, String> {
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
                if title.contains(title_part) {
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
