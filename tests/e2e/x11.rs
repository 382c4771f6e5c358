//! Asking a window to close the way a window manager does (a `WM_DELETE_WINDOW` message), so that
//! the app sees a close request it may answer (WebDriver's Close Window destroys the page instead).
//! Xvfb runs no window manager: the test sends the message itself, through Xlib.

#![allow(unsafe_code)] // Xlib is a C API.

use std::ffi::{CStr, CString};
use std::ptr;

use x11_dl::xlib;

/// Sends `WM_DELETE_WINDOW` to the top-level window whose title contains `title_part`.
pub fn ask_to_close(title_part: &str) -> Result<(), String> {
    let xlib = xlib::Xlib::open().map_err(|e| format!("no Xlib: {e}"))?;
    // SAFETY: plain Xlib calls on a display this function opens and closes; every pointer Xlib
    // returns is checked for null and freed with XFree.
    unsafe {
        let display = (xlib.XOpenDisplay)(ptr::null());
        if display.is_null() {
            return Err("cannot open the X display (DISPLAY)".into());
        }
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
        let Some(window) = target else {
            (xlib.XCloseDisplay)(display);
            return Err(format!("no window titled with `{title_part}` among {titles:?}"));
        };
        let protocols = CString::new("WM_PROTOCOLS").unwrap();
        let delete = CString::new("WM_DELETE_WINDOW").unwrap();
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
        (xlib.XFlush)(display);
        (xlib.XCloseDisplay)(display);
    }
    Ok(())
}
