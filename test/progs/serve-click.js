// SPDX-License-Identifier: GPL-2.0-only
// Drives headless Chromium through the DevTools protocol like a person
// would: open flamekit serve's page, sign in with a token, pick a duration,
// click "Capture and download", and wait for the file in the download
// directory. usage: node --experimental-websocket serve-click.js CHROMIUM
//   URL TOKEN SECONDS DOWNLOAD_DIR PROFILE_DIR
// Prints the downloaded file's name; exits 1 with a reason on failure.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const [chrome, url, token, secs, dldir, profdir] = process.argv.slice(2);
// a failure takes the browser down too: nothing is left running
let br = null;
const fail = (m) => { console.error("serve-click: " + m); if (br) br.kill(); process.exit(1); };
const deadline = setTimeout(() => fail("timed out"), 90000);
br = spawn(chrome, ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--remote-debugging-port=0", "--user-data-dir=" + profdir, "about:blank"],
    { stdio: ["ignore", "ignore", "pipe"] });
let err = "";
br.stderr.on("data", (d) => {
    err += d;
    const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
    if (m && !started) { started = true; run(m[1]).catch((e) => fail(e.stack || e)); }
});
br.on("exit", (c) => { if (!finished) fail("chromium exited " + c + ": " + err.slice(-400)); });
let started = false, finished = false;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function run(wsurl) {
    const ws = new WebSocket(wsurl);
    await new Promise((r, j) => { ws.onopen = r; ws.onerror = j; });
    let id = 0;
    const waiting = new Map(), events = [];
    ws.onmessage = (m) => {
        const msg = JSON.parse(m.data);
        if (msg.id && waiting.has(msg.id)) {
            const [r, j] = waiting.get(msg.id);
            waiting.delete(msg.id);
            msg.error ? j(new Error(JSON.stringify(msg.error))) : r(msg.result);
        } else if (msg.method) events.push(msg);
    };
    const send = (method, params = {}, sessionId) => new Promise((r, j) => {
        const i = ++id;
        waiting.set(i, [r, j]);
        ws.send(JSON.stringify(sessionId ? { id: i, method, params, sessionId } : { id: i, method, params }));
    });
    await send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: dldir, eventsEnabled: true });
    const { targetId } = await send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
    const s = (m, p) => send(m, p, sessionId);
    const evalJs = async (expr) => (await s("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true })).result.value;
    const waitFor = async (expr, what) => {
        for (let i = 0; i < 200; i++) { if (await evalJs(expr).catch(() => false)) return; await sleep(100); }
        fail("never saw " + what);
    };
    await s("Page.enable");
    await s("Page.navigate", { url });
    await waitFor("!!document.getElementById('token')", "the sign-in page");
    await evalJs(`document.getElementById('token').value = ${JSON.stringify(token)};
                  document.getElementById('signin').click(); true`);
    await waitFor("!!document.getElementById('go')", "the capture page after signing in");
    await evalJs(`document.getElementById('secs').value = ${JSON.stringify(secs)}; true`);
    // a real mouse click on the button's centre
    const box = await evalJs(`(() => { const r = document.getElementById('go').getBoundingClientRect();
                              return [r.x + r.width / 2, r.y + r.height / 2]; })()`);
    for (const type of ["mouseMoved", "mousePressed", "mouseReleased"])
        await s("Input.dispatchMouseEvent", { type, x: box[0], y: box[1], button: "left", clickCount: 1 });
    await waitFor("/capturing|rendering|downloaded/.test(document.getElementById('status').textContent)",
                  "the countdown");
    const countdown = await evalJs("document.getElementById('status').textContent");
    for (let i = 0; i < 600; i++) {
        const done = events.find((e) => e.method === "Browser.downloadProgress" && e.params.state === "completed");
        const files = fs.readdirSync(dldir).filter((f) => !f.endsWith(".crdownload"));
        if (done && files.length) {
            console.log(countdown);
            console.log(files.join("\n"));
            finished = true;
            clearTimeout(deadline);
            br.kill();
            process.exit(0);
        }
        const st = await evalJs("document.getElementById('status').textContent").catch(() => "");
        if (/^\d{3}:|failed/.test(st)) fail("the page says: " + st);
        await sleep(100);
    }
    fail("no download");
}
