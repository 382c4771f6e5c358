// Drives the INSTALLED app through tauri-driver (WebDriver) and checks that it answers:
// the window title, the workspace path in the header, and the captured session listed in the table.
// With --link the app is started as the desktop starts it for a link, with
// `zibby-studio://open?workspace=WORKSPACE&session=SESSION_ID` alone on its command line, and the
// session's view must open.
//
//   node tests/package/check-installed-app.mjs APP WORKSPACE SESSION_ID [--link]
//
// Needs a display (run under xvfb-run -a), tauri-driver (~/.cargo/bin or PATH) and WebKitWebDriver.
// Exits non-zero on any failure.
import { spawn } from "node:child_process";
import { createServer, connect } from "node:net";
import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Builder, By, until } from "selenium-webdriver";

const [app, workspace, sessionId, mode] = process.argv.slice(2);
if (!app || !workspace || !sessionId || (mode !== undefined && mode !== "--link")) {
  console.error("usage: check-installed-app.mjs APP WORKSPACE SESSION_ID [--link]");
  process.exit(2);
}
const root = realpathSync(workspace);
const link = `zibby-studio://open?workspace=${encodeURIComponent(root)}&session=${encodeURIComponent(sessionId)}`;
// The folder on the command line opens without asking and is recorded in the store (the usual
// file, under the caller's XDG_DATA_HOME) as a workspace the user opened: the --link run after it,
// on the same store, then opens it without asking first (a link to an unknown folder asks).
const appArgs = mode === "--link" ? [link] : [root];

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function listening(port) {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

const cargoBin = join(process.env.CARGO_HOME || join(homedir(), ".cargo"), "bin", "tauri-driver");
const tauriDriver = existsSync(cargoBin) ? cargoBin : "tauri-driver";
const port = await freePort();
const nativePort = await freePort();
let driverLog = "";
const driver = spawn(tauriDriver, ["--port", String(port), "--native-port", String(nativePort)], {
  stdio: ["ignore", "pipe", "pipe"],
});
driver.stdout.on("data", (d) => (driverLog += d));
driver.stderr.on("data", (d) => (driverLog += d));
let driverExited = null;
driver.on("exit", (code, signal) => (driverExited = `code ${code}, signal ${signal}`));
driver.on("error", (e) => (driverExited = String(e)));

async function stopDriver() {
  if (driverExited !== null) return;
  // SIGTERM, not SIGKILL: tauri-driver stops WebKitWebDriver (and so the app) only on SIGTERM/SIGINT.
  driver.kill("SIGTERM");
  for (let i = 0; i < 100 && driverExited === null; i++) await new Promise((r) => setTimeout(r, 50));
}

let session;
let failed = false;
try {
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (driverExited !== null) throw new Error(`tauri-driver exited (${driverExited})`);
    if (Date.now() > deadline) throw new Error(`tauri-driver did not listen on ${port} within 10 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const started = Date.now();
  // WebKitWebDriver waits for ever for an app that never offers automation: give up after 60 s.
  const opening = new Builder()
    .usingServer(`http://127.0.0.1:${port}/`)
    .withCapabilities({
      browserName: "wry",
      "tauri:options": { application: app, args: appArgs },
    })
    .build();
  let timer;
  session = await Promise.race([
    opening,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no WebDriver session with ${app} within 60 s`)), 60_000);
    }),
  ]);
  clearTimeout(timer);
  console.log(`session open in ${Date.now() - started} ms`);

  const title = await session.getTitle();
  if (title !== "Zibby Studio") throw new Error(`page title is ${JSON.stringify(title)}, not "Zibby Studio"`);
  console.log(`ok: page title ${JSON.stringify(title)}`);

  const pathElement = await session.wait(until.elementLocated(By.css(".workspace-path")), 15_000);
  const shown = await pathElement.getText();
  if (shown !== root) throw new Error(`.workspace-path shows ${JSON.stringify(shown)}, not ${JSON.stringify(root)}`);
  console.log(`ok: .workspace-path shows ${shown}`);

  const row = await session.wait(
    until.elementLocated(By.css(`tr[data-session-id="${sessionId}"]`)),
    15_000,
    `no table row for session ${sessionId}`,
  );
  const id = await row.findElement(By.css(".session-id")).getText();
  if (id !== sessionId) throw new Error(`the row's .session-id is ${JSON.stringify(id)}, not ${sessionId}`);
  console.log(`ok: session ${sessionId} is listed`);

  if (mode === "--link") {
    await session.wait(
      until.elementLocated(By.css(`#session-view[data-session-id="${sessionId}"]`)),
      15_000,
      `the link did not open session ${sessionId}`,
    );
    console.log(`ok: ${link} opened the session`);
  }
} catch (e) {
  failed = true;
  console.error(`FAIL: ${e && e.stack ? e.stack : e}`);
  console.error(`--- tauri-driver / WebKitWebDriver / app output ---\n${driverLog}--- end ---`);
} finally {
  if (session) await session.quit().catch(() => {});
  await stopDriver();
}
process.exit(failed ? 1 : 0);
