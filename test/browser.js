// SPDX-License-Identifier: GPL-2.0-only
// Drives Debian's headless Chromium for the SVG viewer's tests and browser
// benchmarks, through the DevTools protocol over a pipe (--remote-debugging-
// pipe: NUL-terminated JSON on fds 3 and 4; no network, no npm modules).
// usage: node browser.js SCENARIO.js [ARG...]
//        node browser.js --serve SCENARIO.js REQUESTS ANSWERS
// The second form keeps one Chromium for many runs of the scenario (a
// launch and close cost seconds, more than most runs): each request on the
// fifo REQUESTS is NUL-terminated fields, their count after the first,
// then the paths its output and its errors are appended to, then its
// arguments; each gets its exit status, one line on the fifo ANSWERS. A
// request of no fields ends it.
// Every run starts without a page (test/lib.sh: browser).
// The scenario module exports `async function (b, args)`; b has:
//   b.open(url, {width, height})  new page at that viewport size, loaded
//   b.eval(expr)                  value of a JS expression (awaited) in the page
//   b.click(x, y, {button, modifiers}) / b.move(x, y) / b.wheel(x, y, dy)
//   b.key(key, {modifiers})       a real key press (Tab moves focus, etc.)
//   b.type(text)                  text input into the focused element
//   b.screenshot(file)            PNG of the viewport
//   b.out(name, value)            prints "name=value" (one line) for the test
// Exit status 0 when the scenario finished, 1 on any error (printed).
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const chrome = process.env.FK_CHROMIUM || "/usr/bin/chromium";
const timeoutMs = +(process.env.FK_BROWSER_TIMEOUT_MS || 60000);

/* the profile directory; chromium's helpers may still be finishing */
function rmProfile(dir) {
    for (let i = 0; i < 20; i++) {
        try {
            fs.rmSync(dir, { recursive: true, force: true });
            return;
        } catch (e) {
            Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
        }
    }
}

function launch() {
    const prof = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), "fk-chrome."));
    const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
        "--allow-file-access-from-files", "--remote-debugging-pipe",
        "--user-data-dir=" + prof, "about:blank"];
    const proc = spawn(chrome, args, { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
    let err = "";
    proc.stderr.on("data", d => { err = (err + d).slice(-4000); });
    const b = new Browser(proc, prof, () => err);
    return b;
}

class Browser {
    constructor(proc, prof, err) {
        this.proc = proc;
        this.prof = prof;
        this.err = err;
        this.id = 0;
        this.pending = new Map();
        this.waiters = [];
        this.buf = Buffer.alloc(0);
        this.session = null;
        this.exceptions = [];
        this.write = text => process.stdout.write(text);
        proc.stdio[4].on("data", d => this.data(d));
        proc.on("exit", code => {
            for (const [, p] of this.pending)
                p.reject(new Error("chromium exited (" + code + "): " + this.err()));
            this.pending.clear();
        });
    }
    data(d) {
        this.buf = Buffer.concat([this.buf, d]);
        let k;
        while ((k = this.buf.indexOf(0)) >= 0) {
            const msg = JSON.parse(this.buf.slice(0, k).toString("utf8"));
            this.buf = this.buf.slice(k + 1);
            if (msg.id !== undefined && this.pending.has(msg.id)) {
                const p = this.pending.get(msg.id);
                this.pending.delete(msg.id);
                if (msg.error)
                    p.reject(new Error(p.method + ": " + msg.error.message));
                else
                    p.resolve(msg.result);
            } else if (msg.method) {
                if (msg.method === "Runtime.exceptionThrown")
                    this.exceptions.push(msg.params.exceptionDetails);
                this.waiters = this.waiters.filter(w => !(w.method === msg.method && (w.resolve(msg.params), true)));
            }
        }
    }
    send(method, params, top) {
        const id = ++this.id;
        const msg = { id, method, params: params || {} };
        if (this.session && !top)
            msg.sessionId = this.session;
        return new Promise((resolve, reject) => {
            this.pending.set(id, { resolve, reject, method });
            this.proc.stdio[3].write(JSON.stringify(msg) + "\0");
        });
    }
    event(method) {
        return new Promise(resolve => this.waiters.push({ method, resolve }));
    }
    async open(url, opt) {
        opt = opt || {};
        if (this.session) {
            await this.send("Target.closeTarget", { targetId: this.target }, true);
            this.session = null;
        }
        const t = await this.send("Target.createTarget", { url: "about:blank" }, true);
        this.target = t.targetId;
        const a = await this.send("Target.attachToTarget", { targetId: t.targetId, flatten: true }, true);
        this.session = a.sessionId;
        this.flushExceptions();
        await this.send("Page.enable");
        await this.send("Runtime.enable");
        await this.send("Emulation.setDeviceMetricsOverride",
            { width: opt.width || 1280, height: opt.height || 800, deviceScaleFactor: 1, mobile: false });
        const loaded = this.event("Page.loadEventFired");
        await this.send("Page.navigate", { url });
        await loaded;
        /* let load handlers and a frame or two run */
        await this.eval("new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)))");
    }
    flushExceptions() {
        for (const e of this.exceptions)
            this.write("exception=" + (e.exception ? e.exception.description : e.text).split("\n")[0] + "\n");
        this.exceptions = [];
    }
    async eval(expr) {
        const r = await this.send("Runtime.evaluate", { expression: expr, awaitPromise: true, returnByValue: true });
        if (r.exceptionDetails)
            throw new Error("eval: " + expr.slice(0, 200) + ": " +
                (r.exceptionDetails.exception ? r.exceptionDetails.exception.description : r.exceptionDetails.text));
        return r.result.value;
    }
    async settle() { await this.eval("new Promise(r => requestAnimationFrame(() => setTimeout(r, 20)))"); }
    mods(m) {
        m = m || [];
        return (m.includes("Alt") ? 1 : 0) | (m.includes("Control") ? 2 : 0) | (m.includes("Meta") ? 4 : 0) | (m.includes("Shift") ? 8 : 0);
    }
    async move(x, y) {
        await this.send("Input.dispatchMouseEvent", { type: "mouseMoved", x, y });
        await this.settle();
    }
    async click(x, y, opt) {
        opt = opt || {};
        const button = opt.button || "left", modifiers = this.mods(opt.modifiers);
        await this.send("Input.dispatchMouseEvent", { type: "mouseMoved", x, y, modifiers });
        await this.send("Input.dispatchMouseEvent", { type: "mousePressed", x, y, button, clickCount: 1, modifiers });
        await this.send("Input.dispatchMouseEvent", { type: "mouseReleased", x, y, button, clickCount: 1, modifiers });
        await this.settle();
    }
    async wheel(x, y, dy) {
        await this.send("Input.dispatchMouseEvent", { type: "mouseWheel", x, y, deltaX: 0, deltaY: dy });
        await this.settle();
    }
    async key(key, opt) {
        opt = opt || {};
        const named = { Tab: 9, Enter: 13, Escape: 27, " ": 32, ArrowLeft: 37, ArrowUp: 38,
            ArrowRight: 39, ArrowDown: 40, Backspace: 8, F3: 114 };
        const code = named[key] || key.toUpperCase().charCodeAt(0);
        const modifiers = this.mods(opt.modifiers);
        const text = key.length === 1 && !(modifiers & 6) ? key : key === "Enter" ? "\r" : undefined;
        const common = { key, code: key.length === 1 ? (/[a-z]/i.test(key) ? "Key" + key.toUpperCase() : key === " " ? "Space" : key) : key,
            windowsVirtualKeyCode: code, nativeVirtualKeyCode: code, modifiers };
        await this.send("Input.dispatchKeyEvent", Object.assign({ type: text ? "keyDown" : "rawKeyDown", text }, common));
        await this.send("Input.dispatchKeyEvent", Object.assign({ type: "keyUp" }, common));
        await this.settle();
    }
    async type(text) {
        await this.send("Input.insertText", { text });
        await this.settle();
    }
    async screenshot(file) {
        const r = await this.send("Page.captureScreenshot", { format: "png" });
        fs.writeFileSync(file, Buffer.from(r.data, "base64"));
    }
    out(name, value) {
        const v = typeof value === "string" ? value : JSON.stringify(value);
        this.write(name + "=" + String(v).replace(/\n/g, "\\n") + "\n");
    }
    async close() {
        const exited = this.proc.exitCode !== null ? Promise.resolve()
            : new Promise(r => this.proc.once("exit", r));
        try {
            await Promise.race([this.send("Browser.close", {}, true), new Promise(r => setTimeout(r, 3000))]);
        } catch (e) { /* already gone */ }
        await Promise.race([exited, new Promise(r => setTimeout(r, 5000))]);
        if (this.proc.exitCode === null && this.proc.signalCode === null) {
            this.proc.kill("SIGKILL");
            await exited;
        }
        rmProfile(this.prof);
    }
}

/* The requests on the fifo at path, one at a time: [out, err, args], or
 * null at a request of no fields or once every writer has closed it. */
function requests(path) {
    const stream = fs.createReadStream(path);
    let buf = Buffer.alloc(0), ended = false, wake = null;
    stream.on("data", d => { buf = Buffer.concat([buf, d]); if (wake) wake(); });
    stream.on("end", () => { ended = true; if (wake) wake(); });
    stream.on("error", () => { ended = true; if (wake) wake(); });
    function fields() {
        const f = [];
        let at = 0, k;
        while ((k = buf.indexOf(0, at)) >= 0) {
            f.push(buf.slice(at, k).toString("utf8"));
            at = k + 1;
            if (f.length === +f[0] + 1) {
                buf = buf.slice(at);
                return f;
            }
        }
        return null;
    }
    return async function next() {
        for (;;) {
            const f = fields();
            if (f && +f[0] === 0)   /* the end, before every writer has closed */
                return null;
            if (f)
                return [f[1], f[2], f.slice(3)];
            if (ended)
                return null;
            await new Promise(r => { wake = r; });
            wake = null;
        }
    };
}

async function serve(scenario, reqPath, ansPath) {
    const run = require(path.resolve(scenario));
    const next = requests(reqPath);
    const ans = fs.openSync(ansPath, "w");
    let b = null, req;
    while ((req = await next())) {
        const [outPath, errPath, args] = req;
        const out = fs.openSync(outPath, "a"), err = fs.openSync(errPath, "a");
        if (!b || b.proc.exitCode !== null || b.proc.signalCode !== null)
            b = launch();
        b.write = text => fs.writeSync(out, text);
        let rc = 0, timer;
        const timeout = new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error("timed out after " + timeoutMs + " ms")), timeoutMs);
        });
        try {
            await Promise.race([run(b, args), timeout]);
            b.flushExceptions();
            if (b.session) {    /* the next run starts without a page */
                await Promise.race([b.send("Target.closeTarget", { targetId: b.target }, true), timeout]);
                b.session = null;
            }
        } catch (e) {
            fs.writeSync(err, "browser.js: " + (e && e.stack || e) + "\n");
            for (const x of b.exceptions)
                fs.writeSync(err, "page exception: " + (x.exception ? x.exception.description : x.text) + "\n");
            rc = 1;
            /* a run that failed may have left the browser in any state */
            b.proc.kill("SIGKILL");
            rmProfile(b.prof);
            b = null;
        }
        clearTimeout(timer);
        fs.closeSync(out);
        fs.closeSync(err);
        fs.writeSync(ans, rc + "\n");
    }
    if (b)
        await b.close();
    process.exit(0);
}

async function main() {
    if (process.argv[2] === "--serve")
        return serve(process.argv[3], process.argv[4], process.argv[5]);
    const [scenario, ...args] = process.argv.slice(2);
    if (!scenario) {
        process.stderr.write("usage: node browser.js SCENARIO.js [ARG...]\n");
        process.exit(2);
    }
    const run = require(path.resolve(scenario));
    const b = launch();
    const timer = setTimeout(() => {
        process.stderr.write("browser.js: timed out after " + timeoutMs + " ms\n");
        b.proc.kill("SIGKILL");
        rmProfile(b.prof);
        process.exit(1);
    }, timeoutMs);
    let rc = 0;
    try {
        await run(b, args);
        b.flushExceptions();
    } catch (e) {
        process.stderr.write("browser.js: " + (e && e.stack || e) + "\n");
        for (const x of b.exceptions)
            process.stderr.write("page exception: " + (x.exception ? x.exception.description : x.text) + "\n");
        rc = 1;
    }
    clearTimeout(timer);
    await b.close();
    process.exit(rc);
}
main();
