// SPDX-License-Identifier: GPL-2.0-only
// Scenarios for test/t-svg.sh and test/t-diff.sh, run by test/browser.js:
//   node browser.js svg-scenarios.js STEP:ARG[,ARG...] ...
// Each step prints "name=value" lines the shell test compares with figures
// it computes itself from the folded input. Steps drive the page with real
// input events (mouse, keys) and read what the page shows; the graph's
// inspection object (svgRoot.fkGraph) only finds frames and their boxes.
"use strict";

const G = "document.documentElement.fkGraph";

async function box(b, expr) {
    return b.eval(`(function () { var e = ${expr}; if (!e) return null;
        var r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2, r.width, r.top, r.bottom]; })()`);
}
/* the widest drawn frame with this name (in the main graph) */
function widest(root, name) {
    return `(function () { var g = ${root}.graph, t = g.t, best = -1;
        for (var k = 0; k < t.n; k++) if (g.names[t.name[k]] === ${JSON.stringify(name)} && (best < 0 || t.w[k] > t.w[best])) best = k;
        return best; })()`;
}
/* the node at a ";"-separated path from the root */
function nodeAt(root, path) {
    return `(function () { var g = ${root}.graph, t = g.t, want = ${JSON.stringify(path.split(";"))}, cur = 0;
        for (var d = 0; d < want.length; d++) { var found = -1;
            for (var k = cur + 1; k < t.end[cur]; k = t.end[k]) if (g.names[t.name[k]] === want[d]) { found = k; break; }
            if (found < 0) return -1; cur = found; }
        return cur; })()`;
}
async function clickNode(b, root, idx, opt) {
    const bx = await box(b, `${root}.rect(${idx})`);
    if (!bx)
        throw new Error("frame " + idx + " is not drawn");
    await b.click(bx[0], bx[1], opt);
}
async function text(b, expr) { return b.eval(`(function () { var e = ${expr}; return e ? e.textContent : null; })()`); }
async function search(b, root, re) {
    await b.key("f", { modifiers: ["Control"] });
    await b.eval(`${root}.graph.searchInput.value = ""`);
    await b.type(re);
    await b.key("Enter");
    await b.key("Escape");  /* close the box; the search stays */
}

const steps = {
    /* load FILE at WxH (default 1280x800) */
    async open(b, [file, w, h]) {
        await b.open("file://" + file, { width: +w || 1280, height: +h || 800 });
        b.out("error", await b.eval("document.documentElement.getAttribute('data-error') || ''"));
    },
    async title(b) { b.out("title", await b.eval("document.title")); },
    /* geometry of the widest frame named NAME: x width y class fill
     * (class "-" when none) */
    async frame(b, [name]) {
        const i = await b.eval(widest(G, name));
        b.out("frame." + name, i < 0 ? "none" : await b.eval(`(function () { var r = ${G}.rect(${i});
            return r ? [r.getAttribute("x"), r.getAttribute("width"), r.getAttribute("y"), r.getAttribute("class") || "-", r.getAttribute("fill")].join(" ") : "undrawn"; })()`));
    },
    /* the label of the widest frame named NAME and its colour class */
    async label(b, [name]) {
        const i = await b.eval(widest(G, name));
        b.out("label." + name, await b.eval(`(function () { var v = ${G}.graph.main, t = v.texts[${i}];
            return t && (t.getAttribute("class") || "").indexOf("hide") < 0 ? t.textContent : ""; })()`));
    },
    /* hover the widest frame named NAME: the status line and the tooltip */
    async hover(b, [name]) {
        const i = await b.eval(widest(G, name));
        const bx = await box(b, `${G}.rect(${i})`);
        await b.move(bx[0], bx[1]);
        b.out("details." + name, await text(b, `${G}.graph.details`));
        b.out("tooltip." + name, await b.eval(`(function () { var r = ${G}.rect(${i}), t = r && r.querySelector("title"); return t ? t.textContent : ""; })()`));
        await b.move(2, 2);
    },
    /* click the frame at PATH (a;b;c): zoom */
    async zoom(b, [path]) {
        const i = await b.eval(nodeAt(G, path));
        b.out("zoom.node", i);
        await clickNode(b, G, i);
        b.out("zoom.state", JSON.stringify(await b.eval(`${G}.state()`)));
    },
    async search(b, [re]) {
        await search(b, G, re);
        b.out("matched", await text(b, `${G}.graph.matched`));
    },
    async matched(b) { b.out("matched", await text(b, `${G}.graph.matched`)); },
    async key(b, [k, mod]) { await b.key(k, mod ? { modifiers: [mod] } : {}); },
    async state(b) {
        b.out("state", await b.eval("document.documentElement.getAttribute('data-state') || ''"));
        b.out("zoomstate", JSON.stringify(await b.eval(`${G}.state()`)));
    },
    /* count frames drawn, and whether any hidden-class frame name is NAME */
    async drawn(b) {
        b.out("drawn", await b.eval(`${G}.graph.main.shown.length`));
    },
    /* is the element in the viewport (0..innerHeight)? */
    async viewport(b) {
        const vh = await b.eval("innerHeight");
        const items = {
            base: `${G}.rect(0)`,
            search: `${G}.graph.btnSearch`,
            top: `${G}.graph.btnTop`,
            details: `${G}.graph.details`,
            matched: `${G}.graph.matched`
        };
        b.out("scrollY", await b.eval("Math.round(scrollY)"));
        b.out("svgHeight", await b.eval(`${G}.graph.H`));
        b.out("svgWidth", await b.eval(`Math.round(document.documentElement.getBoundingClientRect().width)`));
        for (const k in items) {
            const bx = await box(b, items[k]);
            b.out("visible." + k, bx && bx[3] >= 0 && bx[4] <= vh ? "yes" : "no " + JSON.stringify(bx));
        }
    },
    /* the status line after hovering the base frame */
    async detailsVisible(b) {
        const bx = await box(b, `${G}.rect(0)`);
        await b.move(bx[0], bx[1]);
        b.out("details.base", await text(b, `${G}.graph.details`));
    },
    /* top functions table: rows as "name|self|total" */
    async top(b, [n, sortBy]) {
        if (await b.eval(`${G}.graph.panelKind`) !== "top")
            await b.key("t");
        if (sortBy) {
            const bx = await box(b, `Array.from(${G}.graph.panel.querySelectorAll(".fk-th")).find(function (e) { return e.textContent.indexOf(${JSON.stringify(sortBy)}) === 0; })`);
            await b.click(bx[0], bx[1]);
        }
        const rows = await b.eval(`Array.from(${G}.graph.panel.querySelectorAll(".fk-row")).slice(0, ${+n || 5}).map(function (r) {
            var t = r.querySelectorAll("text"), last = t[t.length - 1].textContent; return [last, t[1].textContent, t[3].textContent, t[0].textContent, t[2].textContent].join("|"); })`);
        rows.forEach((r, i) => b.out("top." + (i + 1), r));
        b.out("top.head", await b.eval(`${G}.graph.panel.querySelector("text").textContent`));
    },
    /* click the table row of NAME (search it) */
    async topClick(b, [name]) {
        const bx = await box(b, `Array.from(${G}.graph.panel.querySelectorAll(".fk-row")).find(function (r) { var t = r.querySelectorAll("text"); return t[t.length - 1].textContent === ${JSON.stringify(name)}; })`);
        await b.click(bx[0], bx[1]);
        b.out("matched", await text(b, `${G}.graph.matched`));
        b.out("panel", await b.eval(`${G}.graph.panelKind || "none"`));
    },
    /* callers and callees of NAME (right-click its widest frame): the
     * direct callers and callees with their counts */
    async sandwich(b, [name]) {
        const i = await b.eval(widest(G, name));
        await clickNode(b, G, i, { button: "right" });
        b.out("mode", JSON.stringify(await b.eval(`${G}.state().mode`)));
        const dump = (view) => `(function () { var g = ${G}.graph, v = g.sw.${view}, t = v.t, out = [];
            out.push(g.names[t.name[0]] + ":" + t.w[0]);
            for (var k = 1; k < t.n; k = t.end[k]) out.push(g.names[t.name[k]] + ":" + t.w[k]);
            return out.join(","); })()`;
        b.out("callers", await b.eval(dump("callers")));
        b.out("callees", await b.eval(dump("callees")));
        /* what the page shows: hover the first drawn direct caller */
        const firstCaller = await b.eval(`(function () { var v = ${G}.graph.sw.callers; for (var k = 1; k < v.t.n; k = v.t.end[k]) if (v.rects[k] && v.rects[k].getAttribute("class").indexOf("hide") < 0) return k; return -1; })()`);
        if (firstCaller > 0) {
            const bx = await box(b, `${G}.graph.sw.callers.rects[${firstCaller}]`);
            await b.move(bx[0], bx[1]);
            b.out("sandwich.details", await text(b, `${G}.graph.details`));
        }
        await b.key("Escape");
        b.out("mode.after", JSON.stringify(await b.eval(`${G}.state().mode`)));
    },
    /* the diff legend as shown and a contrast check of every label */
    async legend(b) {
        b.out("legend", await b.eval(`Array.from(document.querySelectorAll(".fk-legend text")).map(function (t) { return t.textContent; }).join(" | ")`));
        const bx = await box(b, `document.querySelector(".fk-legend")`);
        const vh = await b.eval("innerHeight");
        b.out("legend.visible", bx && bx[3] >= 0 && bx[4] <= vh ? "yes" : "no");
    },
    /* lowest label/fill contrast ratio over drawn labels */
    async contrast(b) {
        b.out("contrast.min", await b.eval(`(function () {
            function lum(c) { var v = c / 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
            function L(rgb) { var m = rgb.match(/\\d+/g).map(Number); return 0.2126 * lum(m[0]) + 0.7152 * lum(m[1]) + 0.0722 * lum(m[2]); }
            var v = ${G}.graph.main, min = 99;
            for (var i = 0; i < v.shown.length; i++) {
                var n = v.shown[i], t = v.texts[n], r = v.rects[n];
                if (!t || (t.getAttribute("class") || "").indexOf("hide") >= 0 || !t.textContent) continue;
                var a = L(getComputedStyle(t).fill), c = L(getComputedStyle(r).fill);
                var ratio = (Math.max(a, c) + 0.05) / (Math.min(a, c) + 0.05);
                if (ratio < min) min = ratio;
            }
            return min.toFixed(2); })()`));
    },
    /* keyboard only: Tab to the buttons, open search, toggle case */
    async keyboard(b, [re]) {
        await b.eval("document.activeElement && document.activeElement.blur && document.activeElement.blur()");
        const seen = [];
        for (let k = 0; k < 8; k++) {
            await b.key("Tab");
            const label = await b.eval("document.activeElement ? (document.activeElement.getAttribute && document.activeElement.getAttribute('aria-label')) || document.activeElement.localName : ''");
            seen.push(label);
            if (/^Search frames/.test(label))
                break;
        }
        b.out("kb.tabbed", seen.join(" / "));
        await b.key("Enter");
        b.out("kb.afterEnter", await b.eval("document.activeElement ? document.activeElement.localName + ':' + (document.activeElement.getAttribute('aria-label') || '') : ''"));
        await b.type(re);
        await b.key("Enter");
        b.out("kb.matched", await text(b, `${G}.graph.matched`));
        await b.key("Escape");
        /* next: the case toggle, pressed with Space */
        await b.key("Tab");
        b.out("kb.focus2", await b.eval("document.activeElement.getAttribute('aria-label') || ''"));
        await b.key(" ");
        b.out("kb.pressed", await b.eval(`${G}.graph.btnCase.getAttribute("aria-pressed")`));
        b.out("kb.matchedCase", await text(b, `${G}.graph.matched`));
        await b.key("Escape");
        b.out("kb.cleared", await text(b, `${G}.graph.matched`));
    },
    /* a bad regular expression: a message, gone after Esc */
    async badRegex(b) {
        await search(b, G, "a(b");
        b.out("bad.msg", await text(b, `${G}.graph.matched`));
        await b.key("Escape");
        b.out("bad.after", await text(b, `${G}.graph.matched`));
    },
    /* the info panel: where it is and what it says */
    async info(b) {
        b.out("info.button", await b.eval(`${G}.graph.btnInfo ? "yes" : "no"`));
        await b.key("i");
        b.out("info.open", await b.eval(`${G}.graph.panelKind || "none"`));
        b.out("info.lines", await b.eval(`Array.from(${G}.graph.panel.querySelectorAll("text")).map(function (t) { return t.textContent; }).join(" | ")`));
        const bx = await box(b, `${G}.graph.panel`);
        const vh = await b.eval("innerHeight");
        b.out("info.visible", bx && bx[3] >= 0 && bx[3] < vh ? "yes" : "no " + JSON.stringify(bx));
        await b.key("Escape");
        b.out("info.closed", await b.eval(`${G}.graph.panelKind || "none"`));
    },
    /* HTML page with several graphs: per graph index, click PATH, search RE */
    async pageGraphs(b) {
        b.out("page.graphs", await b.eval(`document.querySelectorAll("svg.fkg").length + " " + Array.from(document.querySelectorAll("svg.fkg")).filter(function (s) { return s.fkGraph && s.fkGraph.graph; }).length`));
        b.out("page.hiddenPara", await b.eval(`getComputedStyle(document.querySelector("p.hide")).display`));
        b.out("page.paraFont", await b.eval(`getComputedStyle(document.querySelector("p.hide")).fontSize`));
    },
    async pageZoom(b, [idx, path]) {
        const root = `document.querySelectorAll("svg.fkg")[${idx}].fkGraph`;
        await b.eval(`document.querySelectorAll("svg.fkg")[${idx}].scrollIntoView()`);
        const i = await b.eval(nodeAt(root, path));
        await clickNode(b, root, i);
        b.out("page.state", await b.eval(`JSON.stringify(Array.from(document.querySelectorAll("svg.fkg")).map(function (s) { return s.fkGraph.state(); }))`));
    },
    async pageSearch(b, [idx, re]) {
        const root = `document.querySelectorAll("svg.fkg")[${idx}].fkGraph`;
        await b.eval(`document.querySelectorAll("svg.fkg")[${idx}].scrollIntoView()`);
        const bx = await box(b, `${root}.rect(0)`);
        await b.click(bx[0], bx[1]);   /* focus this graph (and reset its zoom) */
        await search(b, root, re);
        b.out("page.matched", await b.eval(`Array.from(document.querySelectorAll("svg.fkg")).map(function (s) { return s.fkGraph.graph.matched.textContent; }).join(" | ")`));
    },
    /* graphs in <object> and <iframe>: their own documents */
    async frames(b, [path]) {
        const docs = `Array.from(document.querySelectorAll("object, iframe")).map(function (f) { return f.contentDocument; })`;
        b.out("frames.graphs", await b.eval(`${docs}.map(function (d) { return d && d.documentElement.fkGraph && d.documentElement.fkGraph.graph ? "ok" : "none"; }).join(" ")`));
        const n = await b.eval(`${docs}.length`);
        for (let k = 0; k < n; k++) {
            const root = `(${docs})[${k}].documentElement.fkGraph`;
            const i = await b.eval(nodeAt(root, path));
            const inner = await box(b, `${root}.rect(${i})`);
            const outer = await b.eval(`(function () { var r = document.querySelectorAll("object, iframe")[${k}].getBoundingClientRect(); return [r.x, r.y]; })()`);
            await b.click(outer[0] + inner[0], outer[1] + inner[1]);
            b.out("frames.zoom" + k, JSON.stringify(await b.eval(`${root}.state().zoom === ${i}`)));
        }
    },
    /* timings for bench/svg.sh: load, zoom and search in ms */
    async timings(b, [file, path, re]) {
        const t0 = Date.now();
        await b.open("file://" + file, { width: 1280, height: 800 });
        b.out("load.ms", Date.now() - t0);
        b.out("load.nav", await b.eval(`(function () { var n = performance.getEntriesByType("navigation")[0]; return Math.round(n.loadEventEnd); })()`));
        const isFk = await b.eval("!!(document.documentElement.fkGraph && document.documentElement.fkGraph.graph)");
        if (isFk) {
            const i = await b.eval(nodeAt(G, path));
            b.out("zoom.ms", await b.eval(`(function () { var g = ${G}.graph, t0 = performance.now(); g.zoomTo(${i}); document.documentElement.getBoundingClientRect(); return (performance.now() - t0).toFixed(1); })()`));
            b.out("search.ms", await b.eval(`(function () { var g = ${G}.graph, t0 = performance.now(); g.search(${JSON.stringify(re)}); document.documentElement.getBoundingClientRect(); return (performance.now() - t0).toFixed(1); })()`));
            b.out("matched", await text(b, `${G}.graph.matched`));
        } else {
            /* flamegraph.pl's SVG: its own zoom() and search() functions */
            const want = path.split(";").pop();
            b.out("zoom.ms", await b.eval(`(function () { var gs = document.querySelectorAll("g"), el = null, most = -1;
                for (var k = 0; k < gs.length; k++) { var t = gs[k].querySelector("title"), w = ${JSON.stringify(want + " (")};
                    if (t && t.textContent.indexOf(w) === 0) { var n = parseInt(t.textContent.slice(w.length).replace(/,/g, ""), 10); if (n > most) { most = n; el = gs[k]; } } }
                var t0 = performance.now(); zoom(el); document.documentElement.getBoundingClientRect(); return (performance.now() - t0).toFixed(1); })()`));
            b.out("search.ms", await b.eval(`(function () { var t0 = performance.now(); search(${JSON.stringify(re)}); document.documentElement.getBoundingClientRect(); return (performance.now() - t0).toFixed(1); })()`));
            b.out("matched", await b.eval(`document.getElementById("matched").textContent`));
        }
    },
    async screenshot(b, [file]) { await b.screenshot(file); }
};

module.exports = async function (b, args) {
    for (const a of args) {
        const k = a.indexOf(":"), name = k < 0 ? a : a.slice(0, k);
        const params = k < 0 ? [] : a.slice(k + 1).split(",");
        if (!steps[name])
            throw new Error("no step " + name);
        await steps[name](b, params.map(p => p.replace(/%2C/g, ",").replace(/%3A/g, ":")));
    }
};
