/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit flame graph viewer (compiled into every SVG flamekit writes).
 * The SVG holds a static picture (for <img> and image viewers: frames as
 * they would be at the default width) and a data block with every frame
 * (src/lib/render/svg.c: names, then node records in pre-order). We read
 * the data, drop the static picture and draw at the width the SVG gets.
 * All figures come from the data, so search, zoom, the top table and the
 * caller/callee view count every sample.
 * Works as a document of its own, in <object>/<iframe> and pasted into an
 * HTML page, twice too: all state hangs off our own <svg> root (found from
 * document.currentScript), style rules are scoped by its class, and nothing
 * is global. */
(function () {
    "use strict";
    var SVGNS = "http://www.w3.org/2000/svg", XHTML = "http://www.w3.org/1999/xhtml";
    var FONT = 12, CHAR_W = FONT * 0.59, XPAD = 10, BAR_H = 30, STATUS_H = 24;
    var script = document.currentScript;
    var svgRoot = script ? script.ownerSVGElement || script.parentNode : document.documentElement;
    if (!svgRoot || svgRoot.fkGraph || !svgRoot.getAttribute)
        return;
    svgRoot.fkGraph = {};

    /* ---- numbers and text ---- */

    function fmtInt(n) {
        var s = String(Math.round(n)), neg = s.charAt(0) === "-";
        if (neg)
            s = s.slice(1);
        for (var i = s.length - 3; i > 0; i -= 3)
            s = s.slice(0, i) + "," + s.slice(i);
        return (neg ? "-" : "") + s;
    }
    /* Counts that are times (countname ns, us, ms, s or pprof's unit
     * words: flamekit offcpu's nanoseconds) read as durations. */
    var TIME_UNITS = { ns: 1, nanoseconds: 1, us: 1e3, microseconds: 1e3, ms: 1e6, milliseconds: 1e6,
        s: 1e9, seconds: 1e9 };
    function fmtDur(ns) {
        var a = Math.abs(ns), u = a >= 1e9 ? [1e9, " s"] : a >= 1e6 ? [1e6, " ms"] : a >= 1e3 ? [1e3, " us"] : [1, " ns"];
        var v = ns / u[0], av = Math.abs(v);
        return (u[0] === 1 ? String(Math.round(v)) : v.toFixed(av >= 100 ? 0 : av >= 10 ? 1 : 2)) + u[1];
    }
    /* n counts as text with their unit: "1,234 samples" or "12.5 ms" */
    function fmtCount(n, countname) {
        var scale = TIME_UNITS[countname];
        return scale ? fmtDur(n * scale) : fmtInt(n) + " " + countname;
    }
    /* A share with the digits the data can carry: one decimal from 10%,
     * three significant digits from 1%, two below. */
    function pctNum(v) {
        var a = Math.abs(v);
        if (a === 0)
            return "0";
        if (a >= 99.95 && a <= 100.05)
            return v < 0 ? "-100" : "100";
        if (a >= 10)
            return v.toFixed(1);
        if (a >= 1)
            return v.toFixed(2);
        var d = Math.min(8, 1 - Math.floor(Math.log10(a)));
        return v.toFixed(d);
    }
    function pct(n, d) { return (d > 0 ? pctNum(100 * n / d) : "0") + "%"; }
    function signed(s, v) { return (v > 0 ? "+" : v < 0 ? "\u2212" : "\u00b1") + s; }
    function relChange(after, before) {
        if (before <= 0)
            return after > 0 ? "new" : "unchanged";
        if (after <= 0)
            return "vanished";
        var r = 100 * (after - before) / before, a = Math.abs(r);
        return signed((a >= 10 ? a.toFixed(0) : a.toFixed(1)) + "%", r);
    }
    function cut(s, max) {
        if (s.length <= max)
            return s;
        var cps = Array.from(s);
        return cps.length <= max ? s : cps.slice(0, Math.max(0, max - 2)).join("") + "..";
    }
    function reEscape(s) { return s.replace(/[\\^$.*+?()[\]{}|\/]/g, "\\$&"); }
    function hex2(v) { return (v < 16 ? "0" : "") + v.toString(16); }
    /* WCAG contrast: white labels where they read better than black */
    function lum(c) {
        var v = c / 255;
        return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    }
    function whiteLabel(hex) {
        var c = parseInt(hex.slice(1), 16);
        var l = 0.2126 * lum(c >> 16 & 255) + 0.7152 * lum(c >> 8 & 255) + 0.0722 * lum(c & 255);
        return 1.05 / (l + 0.05) > (l + 0.05) / 0.05;
    }

    /* Colours by name under the palettes that depend only on the name:
     * the same rule as svg.c's name_color (family, then FNV-1a bits). */
    var FAM = { hot: [205, 50, 0, 230, 0, 55], mem: [0, 0, 190, 50, 0, 60], io: [80, 60, 80, 60, 190, 55],
        red: [200, 55, 50, 80, 50, 80], green: [50, 60, 190, 60, 50, 60], blue: [80, 60, 80, 60, 205, 50],
        aqua: [50, 60, 165, 55, 165, 55], yellow: [175, 55, 175, 55, 50, 60], purple: [190, 65, 80, 60, 190, 65],
        orange: [190, 65, 90, 65, 0, 55], wakeup: [0, 0, 110, 60, 200, 55], python: [45, 40, 110, 50, 175, 60] };
    function has(s, x) { return s.indexOf(x) >= 0; }
    function family(pal, s) {
        if ((pal === "hot" || pal === "java" || pal === "js" || pal === "perl") && s.slice(-4) === "_[p]")
            return "python";
        if (pal !== "java" && pal !== "js" && pal !== "perl")
            return FAM[pal] ? pal : "hot";
        var tail = s.length > 4 ? s.slice(-4) : "";
        if (tail === "_[k]")
            return "orange";
        if (tail === "_[j]")
            return "green";
        if (tail === "_[i]")
            return "aqua";
        if (pal === "perl")
            return has(s, "::") || has(s, ".pl") || has(s, ".pm") ? "green" : "red";
        if (pal === "js")
            return has(s, ".js") || has(s, "/") || s.charAt(0) === "~" ? "green" : has(s, "::") ? "yellow" : "red";
        if (has(s, "::"))
            return "yellow";
        return has(s, "/") || (s.charAt(0) === "L" && has(s, ";")) || has(s, "java") || has(s, ".") ? "green" : "red";
    }
    function fmix32(h) {
        h ^= h >>> 16;
        h = Math.imul(h, 0x85ebca6b);
        h ^= h >>> 13;
        h = Math.imul(h, 0xc2b2ae35);
        h ^= h >>> 16;
        return h >>> 0;
    }
    function nameColor(pal, s) {
        var n = s.length, h = 0x811c9dc5;
        if (n > 4 && /_\[[kjip]\]$/.test(s))
            n -= 4;
        for (var i = 0; i < n; i++) {
            var c = s.codePointAt(i);
            if (c > 0xffff)
                i++;
            h = Math.imul(h ^ c, 0x01000193);
        }
        h >>>= 0;
        var f = family(pal, s), c6 = FAM[f], h2 = fmix32((h ^ 0x9e3779b9) >>> 0);
        var v1 = (h & 0xffff) / 65535, v2 = (h >>> 16) / 65535, v3 = (h2 & 0xffff) / 65535;
        var r = Math.floor(c6[0] + c6[1] * v1), g = Math.floor(c6[2] + c6[3] * (f === "hot" ? v1 : v2)),
            b = Math.floor(c6[4] + c6[5] * (f === "hot" ? v2 : v3));
        return "#" + hex2(Math.min(r, 255)) + hex2(Math.min(g, 255)) + hex2(Math.min(b, 255));
    }

    function el(name, attrs, parent, text) {
        var e = document.createElementNS(SVGNS, name);
        for (var k in attrs)
            if (Object.prototype.hasOwnProperty.call(attrs, k))
                e.setAttribute(k, attrs[k]);
        if (text !== undefined)
            e.textContent = text;
        if (parent)
            parent.appendChild(e);
        return e;
    }

    /* ---- the data block ---- */

    var DIGIT = new Int8Array(128).fill(-1);
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_".split("").forEach(function (c, i) {
        DIGIT[c.charCodeAt(0)] = i;
    });

    /* A tree in pre-order arrays: node 0 is the root; end[i] is one past
     * i's subtree; w[i] is the count that sets the width (AFTER in a diff,
     * BEFORE with --negate), o[i] the other one, off[i] the offset of i's
     * left edge from the root's in counts. */
    function Tree(n, diff) {
        this.n = n;
        this.name = new Int32Array(n);
        this.parent = new Int32Array(n);
        this.depth = new Int32Array(n);
        this.end = new Int32Array(n);
        this.w = new Float64Array(n);
        this.o = diff ? new Float64Array(n) : null;
        this.off = new Float64Array(n);
        this.maxDepth = 0;
    }
    /* end[] and off[] from parent[], depth[] and w[] */
    Tree.prototype.finish = function () {
        var open = [], next = [0];
        for (var i = 0; i < this.n; i++) {
            var d = this.depth[i];
            while (open.length > d)
                this.end[open.pop()] = i;
            open.push(i);
            if (d > this.maxDepth)
                this.maxDepth = d;
            this.off[i] = next[d] || 0;
            next[d] = this.off[i] + this.w[i];
            next[d + 1] = this.off[i];
        }
        while (open.length)
            this.end[open.pop()] = this.n;
    };

    function readData(node, diffMode) {
        var text = node.textContent, lines = text.split("\n");
        if (lines[0] === "")
            lines.shift();
        var nn = +node.getAttribute("data-names"), nf = +node.getAttribute("data-fulls");
        var n = +node.getAttribute("data-nodes"), colors = node.getAttribute("data-colors");
        var names = lines.slice(0, nn), ncol = null, fulls = [];
        if (colors === "name") {
            var pal = node.getAttribute("data-palette") || "hot";
            ncol = names.map(function (s) { return nameColor(pal, s); });
        }
        for (var f = 0; f < nf; f++) {
            var l = lines[nn + f], tab = l.indexOf("\t"), id = +l.slice(0, tab);
            (fulls[id] = fulls[id] || []).push(l.slice(tab + 1));
        }
        var diff = diffMode > 0, t = new Tree(n, diff), s = lines[nn + nf] || "", p = 0;
        var c1 = +node.getAttribute("data-c1"), c2 = +node.getAttribute("data-c2");
        function num() {
            var v = 0, c = DIGIT[s.charCodeAt(p++)];
            while (c >= 32) {
                v = v * 32 + (c - 32);
                c = DIGIT[s.charCodeAt(p++)];
            }
            if (c < 0)
                throw new Error("flamekit: damaged data block");
            return v * 32 + c;
        }
        var byWidth = diffMode === 1;   /* a diff draws AFTER, --negate BEFORE */
        t.name[0] = +node.getAttribute("data-root") || 0;
        t.parent[0] = -1;
        t.w[0] = byWidth ? c2 : c1;
        if (diff)
            t.o[0] = byWidth ? c1 : c2;
        var stack = [0];
        for (var k = 1; k < n; k++) {
            var d = t.depth[k - 1] + 1 - num();
            t.depth[k] = d;
            stack.length = d;
            t.parent[k] = stack[d - 1];
            stack.push(k);
            t.name[k] = num();
            var a = num();
            if (diff) {
                var b = num();
                t.w[k] = byWidth ? b : a;
                t.o[k] = byWidth ? a : b;
            } else {
                t.w[k] = a;
            }
        }
        t.finish();
        var vcol = null;
        if (colors === "node") {
            var cl = lines[nn + nf + 1] || "";
            vcol = new Array(n);
            for (var q = 0; q < n; q++)
                vcol[q] = "#" + cl.substr(6 * q, 6);
        }
        return { tree: t, names: names, fulls: fulls, ncol: ncol, vcol: vcol };
    }

    /* ---- one flame graph ---- */

    function Graph(root) {
        var g = this;
        this.root = root;
        this.doc = root.ownerDocument;
        this.win = this.doc.defaultView || window;
        this.standalone = root === this.doc.documentElement;
        var num = function (a, dflt) {
            var v = parseFloat(root.getAttribute(a));
            return isNaN(v) ? dflt : v;
        };
        this.fh = num("data-fh", 16);
        this.ytop = num("data-ytop", 36);
        this.ybottom = num("data-ybottom", 34);
        this.minw = num("data-minw", 0.1);
        this.minwPct = root.hasAttribute("data-minwpct");
        this.countname = root.getAttribute("data-countname") || "samples";
        this.nametype = root.getAttribute("data-nametype") || "Function:";
        this.diffMode = num("data-diff", 0);
        this.inverted = root.hasAttribute("data-inverted");
        var stat = root.querySelector(".fk-static"), dataNode = root.querySelector(".fk-data");
        if (!stat || !dataNode)
            return;
        var data = readData(dataNode, this.diffMode);
        this.t = data.tree;
        this.names = data.names;
        this.fulls = data.fulls;
        this.ncol = data.ncol;
        this.vcol = data.vcol;
        if (this.diffMode) {
            this.maxdelta = parseFloat(dataNode.getAttribute("data-maxdelta")) || 0;
            this.scale1 = parseFloat(dataNode.getAttribute("data-scale1")) || 1;
            this.scale2 = parseFloat(dataNode.getAttribute("data-scale2")) || 1;
        }
        this.ignoreCase = false;
        this.query = "";
        this.re = null;
        this.nameMatch = null;
        this.mode = "graph";
        this.H = num("height", 100);
        this.H0 = this.H;
        this.W = num("width", 1200);
        this.hovered = -1;

        /* our frames replace the static picture */
        this.frames = el("g", { "class": "fk-frames" }, null);
        root.replaceChild(this.frames, stat);
        this.main = new View(this, this.t, this.frames, data.vcol);
        this.bg = root.querySelector(".fk-bg");
        this.titleEl = root.querySelector(".fk-title");
        this.subtitleEl = root.querySelector(".fk-subtitle");
        this.legend = root.querySelector(".fk-legend");
        this.meta = root.querySelector(".fk-meta");
        this.buildChrome();
        this.bindEvents();
        root.fkGraph = this.api();
        if (this.standalone)
            this.restore();
        this.layout();
        if (this.standalone && !this.inverted && this.H > this.win.innerHeight && !this.win.scrollY)
            this.win.scrollTo(0, this.H);  /* start at the base of the graph */
        this.stick();
    }

    /* Inspection for tests and the curious: root.fkGraph. */
    Graph.prototype.api = function () {
        var g = this;
        return {
            graph: g,
            find: function (name) { return g.findName(name); },
            name: function (i) { return g.names[g.t.name[i]]; },
            rect: function (i) { return g.main.rects[i] || null; },
            state: function () { return { zoom: g.main.zoom, query: g.query, mode: g.mode }; }
        };
    };

    Graph.prototype.findName = function (name, from) {
        for (var i = from || 0; i < this.t.n; i++)
            if (this.names[this.t.name[i]] === name)
                return i;
        return -1;
    };

    /* ---- a drawn tree (the graph, or a half of the caller/callee view) ---- */

    function View(g, tree, group, vcol) {
        this.g = g;
        this.t = tree;
        this.group = group;
        this.vcol = vcol;
        this.rects = [];
        this.texts = [];
        this.shown = [];
        this.zoom = 0;
        this.up = !g.inverted;     /* roots at the bottom */
        this.y0 = 0;               /* y of depth 0 */
    }

    View.prototype.color = function (i) {
        var g = this.g, t = this.t;
        if (g.diffMode)
            return g.diffColor(t, i);
        if (this.vcol)
            return this.vcol[i];
        return g.ncol ? g.ncol[t.name[i]] : "#e0a030";
    };

    /* Lay out the subtree of this.zoom (its ancestors full width, faded) in
     * width W, top row at y0 when this.up is false, bottom row when true.
     * Frames narrower than the minimum width are not drawn (still counted).
     * Returns the number of rows used. */
    View.prototype.render = function (W) {
        var g = this.g, t = this.t, z = this.zoom, usable = W - 2 * XPAD;
        var minpx = g.minwPct ? usable * g.minw / 100 : g.minw;
        var scale = t.w[z] > 0 ? usable / t.w[z] : 0, fh = g.fh, want = [], rows = 0;
        for (var a = t.parent[z]; a >= 0; a = t.parent[a])
            want.push(a);
        var end = t.end[z];
        for (var i = z; i < end;) {
            if (t.w[i] > 0 && t.w[i] * scale >= minpx) {
                want.push(i);
                i++;
            } else {
                i = t.end[i];   /* too narrow: so is everything above it */
            }
        }
        var mark = this.mark = this.mark || new Uint8Array(t.n);
        for (var s = 0; s < want.length; s++)
            mark[want[s]] = 1;
        for (var h = 0; h < this.shown.length; h++) {
            var o = this.shown[h];
            if (!mark[o]) {
                this.rects[o].setAttribute("class", "hide");
                if (this.texts[o])
                    this.texts[o].setAttribute("class", "hide");
            }
        }
        for (s = 0; s < want.length; s++)
            mark[want[s]] = 0;
        var zoff = t.off[z], nm = g.nameMatch;
        for (s = 0; s < want.length; s++) {
            var n = want[s], anc = n < z, x, w;
            if (anc) {
                x = XPAD;
                w = usable;
            } else {
                x = XPAD + (t.off[n] - zoff) * scale;
                w = t.w[n] * scale;
            }
            var d = t.depth[n], y = this.up ? this.y0 - d * fh : this.y0 + d * fh;
            if (d + 1 > rows)
                rows = d + 1;
            var r = this.rects[n], fill = this.color(n);
            if (!r) {
                r = this.rects[n] = el("rect", { height: fh - 1 }, this.group);
                r.fkNode = n;
            }
            var cls = nm && nm[t.name[n]] ? "match" : "";
            if (g.diffMode && n > 0 && (t.o[n] === 0 || t.w[n] === 0))
                cls += (t.o[n] === 0) === (g.diffMode === 1) ? " new" : " gone";
            if (anc)
                cls += " anc";
            r.setAttribute("x", x.toFixed(1));
            r.setAttribute("y", y);
            r.setAttribute("width", w.toFixed(1));
            r.setAttribute("fill", fill);
            r.setAttribute("class", cls.trim());
            var chars = Math.floor((w - 6) / CHAR_W), tx = this.texts[n];
            if (chars >= 3) {
                if (!tx) {
                    tx = this.texts[n] = el("text", {}, null);
                    this.group.insertBefore(tx, r.nextSibling);
                }
                tx.setAttribute("x", (x + 3).toFixed(1));
                tx.setAttribute("y", (y + fh / 2 + FONT / 2 - 2.5).toFixed(1));
                var match = nm && nm[t.name[n]];
                tx.setAttribute("class", ((whiteLabel(fill) && !match ? "w " : "") + (match ? "match " : "") + (anc ? "anc" : "")).trim());
                tx.textContent = cut(g.names[t.name[n]], chars);
            } else if (tx) {
                tx.setAttribute("class", "hide");
            }
        }
        this.shown = want;
        return rows;
    };

    View.prototype.hideAll = function () {
        for (var h = 0; h < this.shown.length; h++) {
            var o = this.shown[h];
            this.rects[o].setAttribute("class", "hide");
            if (this.texts[o])
                this.texts[o].setAttribute("class", "hide");
        }
        this.shown = [];
    };

    /* Diff colours (the same formula as svg.c's diff_color): red grew, blue
     * shrank, saturation by |delta| / the largest; frames in only one
     * profile at least 60%. */
    Graph.prototype.delta = function (t, i) {
        /* width count minus the other, the other scaled when normalizing */
        var neg = this.diffMode === 2;
        var before = (neg ? t.w[i] : t.o[i]) * this.scale1, after = (neg ? t.o[i] : t.w[i]) * this.scale2;
        return { before: before, after: after, d: neg ? before - after : after - before };
    };
    Graph.prototype.diffColor = function (t, i) {
        var x = this.delta(t, i), d = x.d, r = this.maxdelta > 0 ? Math.abs(d) / this.maxdelta : 0;
        if (r > 1)
            r = 1;
        if (i > 0 && t.o[i] === 0 && d !== 0 && r < 0.6)
            r = 0.6;
        var v = hex2(Math.round(225 * (1 - r)));
        if (d > 0)
            return "#ff" + v + v;
        if (d < 0)
            return "#" + v + v + "ff";
        return "#e1e1e1";
    };

    /* ---- chrome: toolbar, status line, panels ---- */

    Graph.prototype.button = function (parent, label, title, fn, width) {
        var b = el("g", { "class": "fk-btn", tabindex: "0", role: "button", "aria-label": title }, parent);
        var w = width || Math.round(label.length * CHAR_W + 16);
        el("rect", { x: 0, y: 0, width: w, height: 22 }, b);
        el("text", { x: w / 2, y: 15 }, b, label);
        el("title", {}, b, title);
        b.fkWidth = w;
        var g = this;
        b.addEventListener("click", function (e) {
            e.stopPropagation();
            fn.call(g, e);
        });
        b.addEventListener("keydown", function (e) {
            if (e.key === "Enter" || e.key === " ") {
                e.preventDefault();
                e.stopPropagation();
                fn.call(g, e);
            }
        });
        return b;
    };

    Graph.prototype.buildChrome = function () {
        var root = this.root;
        /* toolbar: stays at the top of what the user sees */
        this.bar = el("g", { "class": "fk-toolbar" }, root);
        this.barBgL = el("rect", { "class": "fk-bar", x: 0, y: 0, height: BAR_H }, this.bar);
        this.barBgR = el("rect", { "class": "fk-bar", y: 0, height: BAR_H }, this.bar);
        this.left = el("g", {}, this.bar);
        this.right = el("g", {}, this.bar);
        this.btnBack = this.button(this.left, "\u2190 Back to graph", "Back to the flame graph (Esc)", this.closeSandwich);
        this.btnReset = this.button(this.left, "Reset Zoom", "Show the whole graph (Esc)", function () { this.zoomTo(0); });
        this.btnSearch = this.button(this.right, "Search", "Search frames by regular expression (Ctrl-F or /)", this.searchButton);
        this.btnCase = this.button(this.right, "Aa", "Ignore case in searches: off (Alt-C)", this.toggleCase, 34);
        this.btnTop = this.button(this.right, "Top functions", "Table of functions by self and total samples (t)", this.toggleTop);
        if (this.meta)
            this.btnInfo = this.button(this.right, "Info", "Capture details (i)", this.toggleInfo);
        this.btnHelp = this.button(this.right, "?", "Keys and mouse (?)", this.toggleHelp, 24);
        /* status line: stays at the bottom of what the user sees */
        this.status = el("g", { "class": "fk-status" }, root);
        this.statusBg = el("rect", { "class": "fk-bar", x: 0, y: 0 }, this.status);
        this.details = el("text", { x: XPAD, y: 0 }, this.status, " ");
        this.matched = el("text", { "class": "fk-right", y: 0 }, this.status, " ");
        if (this.legend)
            this.status.appendChild(this.legend);
        this.panel = el("g", { "class": "fk-panel hide" }, root);
        this.tip = el("title", {});
    };

    Graph.prototype.placeButtons = function () {
        var x = XPAD, y = 4;
        [this.btnBack, this.btnReset].forEach(function (b) {
            if (b.getAttribute("class").indexOf("hide") < 0) {
                b.setAttribute("transform", "translate(" + x + "," + y + ")");
                x += b.fkWidth + 8;
            }
        });
        this.barBgL.setAttribute("width", Math.max(0, x));
        var r = this.W - XPAD, list = [this.btnHelp, this.btnInfo, this.btnTop, this.btnCase, this.btnSearch];
        for (var i = 0; i < list.length; i++) {
            if (!list[i])
                continue;
            r -= list[i].fkWidth;
            list[i].setAttribute("transform", "translate(" + r + "," + y + ")");
            r -= 6;
        }
        if (this.searchBox) {
            r -= 240;
            this.searchBox.setAttribute("x", r);
            this.searchBox.setAttribute("y", y);
            r -= 6;
        }
        this.barBgR.setAttribute("x", r);
        this.barBgR.setAttribute("width", this.W - r);
    };

    Graph.prototype.measureWidth = function () {
        var w = 0;
        try {
            w = this.root.getBoundingClientRect().width;
        } catch (e) { /* not rendered */ }
        return w >= 2 * XPAD + 100 ? Math.floor(w) : this.W;
    };

    /* Everything that depends on the width or the height. */
    Graph.prototype.layout = function () {
        var root = this.root;
        if (root.getAttribute("width") !== "100%")
            root.setAttribute("width", "100%");
        this.W = this.measureWidth();
        this.redraw();
    };

    Graph.prototype.setHeight = function (H) {
        this.H = H;
        var root = this.root;
        root.setAttribute("height", H);
        root.setAttribute("viewBox", "0 0 " + this.W + " " + H);
        if (this.bg) {
            this.bg.setAttribute("width", this.W);
            this.bg.setAttribute("height", H);
        }
        if (this.titleEl)
            this.titleEl.setAttribute("x", this.W / 2);
        if (this.subtitleEl)
            this.subtitleEl.setAttribute("x", this.W / 2);
    };

    Graph.prototype.redraw = function () {
        var fh = this.fh;
        if (this.mode === "sandwich") {
            this.renderSandwich();
        } else {
            var v = this.main, t = this.t;
            /* rows: the deepest frame drawable in this zoom (at least as
             * tall as the static picture, so the page does not jump) */
            var rows = Math.max(this.maxRows(v), Math.round((this.H0 - this.ytop - this.ybottom) / fh));
            var H = this.ytop + this.ybottom + rows * fh;
            this.setHeight(H);
            v.up = !this.inverted;
            v.y0 = v.up ? H - this.ybottom - fh : this.ytop;
            if (t.n)
                v.render(this.W);
            this.btnReset.setAttribute("class", "fk-btn" + (v.zoom > 0 ? "" : " hide"));
        }
        this.btnBack.setAttribute("class", "fk-btn" + (this.mode === "sandwich" ? "" : " hide"));
        this.placeButtons();
        this.statusBg.setAttribute("width", this.W);
        this.matched.setAttribute("x", this.W - XPAD);
        this.stick();
    };

    /* Rows needed to draw the zoomed subtree at this width. */
    Graph.prototype.maxRows = function (v) {
        var t = v.t, z = v.zoom, usable = this.W - 2 * XPAD;
        var minpx = this.minwPct ? usable * this.minw / 100 : this.minw;
        var scale = t.w[z] > 0 ? usable / t.w[z] : 0, rows = t.n ? t.depth[z] + 1 : 1;
        for (var i = z, end = t.end[z]; i < end;) {
            if (t.w[i] > 0 && t.w[i] * scale >= minpx) {
                if (t.depth[i] + 1 > rows)
                    rows = t.depth[i] + 1;
                i++;
            } else {
                i = t.end[i];
            }
        }
        return rows;
    };

    /* Keep the toolbar at the top and the status line at the bottom of the
     * part of the graph in the window (scrolling the page or the document). */
    Graph.prototype.stick = function () {
        var top = 0, bottom = this.H, vh = this.win.innerHeight;
        try {
            var r = this.root.getBoundingClientRect();
            top = Math.max(0, -r.top);
            bottom = Math.min(this.H, vh - r.top);
        } catch (e) { /* not rendered */ }
        var sh = STATUS_H + (this.legend ? 20 : 0);
        if (bottom - top < BAR_H + sh)
            bottom = Math.min(this.H, top + BAR_H + sh);
        this.visTop = top;
        this.visBottom = bottom;
        var y = Math.min(top, this.H - BAR_H);
        this.bar.setAttribute("transform", "translate(0," + y + ")");
        var sy = Math.max(0, bottom - sh);
        this.status.setAttribute("transform", "translate(0," + sy + ")");
        this.statusBg.setAttribute("height", sh);
        this.details.setAttribute("y", sh - 8);
        this.matched.setAttribute("y", sh - 8);
        if (this.legend)
            this.legend.setAttribute("transform", "translate(0," + (-(this.H0 - this.ybottom)) + ")");
        this.placePanel();
    };

    /* ---- events ---- */

    Graph.prototype.bindEvents = function () {
        var g = this, root = this.root, win = this.win;
        function frameOf(e) {
            var t = e.target;
            return t && t.fkNode !== undefined && t.parentNode ? { node: t.fkNode, view: t.parentNode.fkView } : null;
        }
        this.frames.fkView = this.main;
        root.addEventListener("click", function (e) {
            var f = frameOf(e);
            if (!f)
                return;
            if (!g.standalone)
                root.focus({ preventScroll: true });
            var v = f.view || g.main;
            if (e.altKey || e.shiftKey)
                g.openSandwich(v.t === g.t ? g.t.name[f.node] : v.nameIds[f.node]);
            else
                g.zoomView(v, f.node);
        });
        root.addEventListener("contextmenu", function (e) {
            var f = frameOf(e);
            if (!f)
                return;
            e.preventDefault();
            var v = f.view || g.main;
            g.openSandwich(v.t === g.t ? g.t.name[f.node] : v.nameIds[f.node]);
        });
        root.addEventListener("mouseover", function (e) {
            var f = frameOf(e);
            if (f)
                g.show(f.view || g.main, f.node, e.target);
        });
        root.addEventListener("mouseout", function (e) {
            if (frameOf(e)) {
                g.details.textContent = " ";
                g.hovered = -1;
            }
        });
        /* keys: the whole window when the graph is the document, else only
         * while focus is inside the graph (a page may hold several) */
        (this.standalone ? win : root).addEventListener("keydown", function (e) { g.key(e); });
        if (!this.standalone && !root.hasAttribute("tabindex"))
            root.setAttribute("tabindex", "-1");
        var pending = false;
        function later(fn) {
            if (pending)
                return;
            pending = true;
            win.requestAnimationFrame(function () {
                pending = false;
                fn();
            });
        }
        this.doc.addEventListener("scroll", function () { later(function () { g.stick(); }); }, { capture: true, passive: true });
        win.addEventListener("resize", function () {
            later(function () {
                if (g.measureWidth() !== g.W)
                    g.layout();
                else
                    g.stick();
            });
        });
    };

    Graph.prototype.key = function (e) {
        var k = e.key, typing = e.target && e.target.localName === "input";
        if (typing)
            return;
        if ((e.ctrlKey || e.metaKey) && (k === "f" || k === "F") || k === "F3" || (k === "/" && !e.ctrlKey)) {
            e.preventDefault();
            this.openSearch();
        } else if (k === "Escape") {
            this.escape();
        } else if (e.altKey && (k === "c" || k === "C" || e.code === "KeyC")) {
            e.preventDefault();
            this.toggleCase();
        } else if (e.ctrlKey || e.metaKey || e.altKey) {
            return;
        } else if (k === "i" || k === "I") {
            this.toggleInfo();
        } else if (k === "t" || k === "T") {
            this.toggleTop();
        } else if (k === "?") {
            this.toggleHelp();
        } else if ((k === "s" || k === "S") && this.hovered >= 0 && this.mode === "graph") {
            this.openSandwich(this.t.name[this.hovered]);
        }
    };

    /* Esc: the innermost thing first. */
    Graph.prototype.escape = function () {
        if (this.panelKind)
            this.closePanel();
        else if (this.searchBox)
            this.closeSearchBox();
        else if (this.mode === "sandwich")
            this.closeSandwich();
        else if (this.main.zoom > 0)
            this.zoomTo(0);
        else
            this.search("");
    };

    /* ---- hover details ---- */

    Graph.prototype.show = function (v, i, target) {
        var t = v.t, nameId = v.nameIds ? v.nameIds[i] : t.name[i], name = this.names[nameId];
        var total = this.t.w[0], s = this.nametype + " " + name + " (" + fmtCount(t.w[i], this.countname) +
            ", " + pct(t.w[i], total) + ")";
        if (v === this.main) {
            this.hovered = i;
            var z = v.zoom;
            if (z > 0 && i >= z && i < t.end[z])
                s += "; " + pct(t.w[i], t.w[z]) + " of zoomed " + this.names[t.name[z]];
        } else {
            s += "; " + pct(t.w[i], t.w[0]) + " of " + this.names[v.nameIds[0]] + (v.callers ? " (as caller)" : "");
        }
        if (this.diffMode)
            s += this.diffText(t, i, total);
        var full = this.fulls[nameId];
        /* native tooltip: the full names this short name stands for */
        this.tip.textContent = name + (full ? "\n" + full.slice(0, 8).join("\n") +
            (full.length > 8 ? "\n(+" + (full.length - 8) + " more)" : "") : "") + "\n" + s;
        if (target)
            target.appendChild(this.tip);
        var max = Math.floor((this.W - 2 * XPAD) * 0.66 / CHAR_W);
        this.details.textContent = cut(s, max);
    };

    Graph.prototype.diffText = function (t, i, total) {
        var x = this.delta(t, i), neg = this.diffMode === 2, other = neg ? x.after : x.before;
        var s = "; " + (neg ? "after " : "before ") + fmtInt(other);
        var rel = relChange(x.after, x.before);
        var d = x.after - x.before;
        s += "; change " + signed(fmtInt(Math.abs(d)), d) + " (" + rel + " for this frame, " +
            signed(pctNum(Math.abs(100 * d / total)), d) + "% of total)";
        return s;
    };

    /* ---- zoom ---- */

    Graph.prototype.zoomTo = function (i) { this.zoomView(this.main, i); };

    Graph.prototype.zoomView = function (v, i) {
        if (i < 0 || i >= v.t.n)
            return;
        v.zoom = i;
        this.redraw();
        if (v === this.main) {
            this.updateMatched();
            this.save();
            if (this.panelKind === "top")
                this.renderTop();
        }
    };

    /* ---- search ---- */

    Graph.prototype.searchButton = function () {
        if (this.query)
            this.search("");
        else
            this.openSearch();
    };

    Graph.prototype.openSearch = function () {
        if (this.searchBox) {
            this.searchInput.focus();
            this.searchInput.select();
            return;
        }
        var g = this, fo = el("foreignObject", { width: 240, height: 24 }, null);
        var input = this.doc.createElementNS(XHTML, "input");
        input.setAttribute("type", "search");
        input.setAttribute("aria-label", "Search frames (regular expression)");
        input.setAttribute("placeholder", this.casePlaceholder());
        input.value = this.query;
        fo.appendChild(input);
        this.bar.appendChild(fo);
        this.searchBox = fo;
        this.searchInput = input;
        this.placeButtons();
        var timer = 0;
        input.addEventListener("keydown", function (e) {
            e.stopPropagation();
            if (e.key === "Enter") {
                e.preventDefault();
                clearTimeout(timer);
                g.search(input.value);
            } else if (e.key === "Escape") {
                e.preventDefault();
                g.closeSearchBox();
            } else if (e.altKey && (e.key === "c" || e.key === "C" || e.code === "KeyC")) {
                e.preventDefault();
                g.toggleCase();
            }
        });
        input.addEventListener("input", function () {
            clearTimeout(timer);
            timer = setTimeout(function () { g.search(input.value, true); }, 250);
        });
        input.focus();
    };

    Graph.prototype.casePlaceholder = function () {
        return "regex; case " + (this.ignoreCase ? "ignored" : "matters") + " (Alt-C)";
    };

    Graph.prototype.closeSearchBox = function () {
        if (!this.searchBox)
            return;
        this.bar.removeChild(this.searchBox);
        this.searchBox = null;
        this.searchInput = null;
        this.placeButtons();
        if (this.btnSearch.focus)
            this.btnSearch.focus({ preventScroll: true });
    };

    Graph.prototype.toggleCase = function () {
        this.ignoreCase = !this.ignoreCase;
        this.btnCase.setAttribute("class", "fk-btn" + (this.ignoreCase ? " on" : ""));
        var label = "Ignore case in searches: " + (this.ignoreCase ? "on" : "off") + " (Alt-C)";
        this.btnCase.setAttribute("aria-label", label);
        this.btnCase.setAttribute("aria-pressed", this.ignoreCase ? "true" : "false");
        this.btnCase.lastChild.textContent = label;
        if (this.searchInput)
            this.searchInput.setAttribute("placeholder", this.casePlaceholder());
        if (this.query)
            this.search(this.query);
        else
            this.message(this.ignoreCase ? "searches ignore case" : "searches match case");
    };

    Graph.prototype.message = function (s, isError) {
        this.matched.textContent = s || " ";
        this.matched.setAttribute("class", "fk-right" + (isError ? " fk-msg" : ""));
    };

    /* Mark frames whose name (or a full name it stands for) matches. */
    Graph.prototype.search = function (q, live) {
        var re = null;
        q = q || "";
        if (q) {
            var flags = this.ignoreCase ? "i" : "", src = q;
            if (src.indexOf("(?i)") === 0) {
                src = src.slice(4);
                flags = "i";
            }
            try {
                re = new RegExp(src, flags);
            } catch (e) {
                if (!live) {
                    this.message("bad regular expression: " + cut(q, 60), true);
                }
                return;
            }
        }
        this.query = q;
        this.re = re;
        if (re) {
            var nm = new Uint8Array(this.names.length), names = this.names, fulls = this.fulls;
            for (var i = 0; i < names.length; i++) {
                var m = re.test(names[i]);
                if (!m && fulls[i])
                    m = fulls[i].some(function (f) { return re.test(f); });
                nm[i] = m ? 1 : 0;
            }
            this.nameMatch = nm;
        } else {
            this.nameMatch = null;
        }
        if (this.searchInput && this.searchInput.value !== q)
            this.searchInput.value = q;
        this.btnSearch.lastChild.textContent = re ? "Clear the search (Esc)" : "Search frames by regular expression (Ctrl-F or /)";
        this.btnSearch.childNodes[1].textContent = re ? "Reset Search" : "Search";
        this.btnSearch.fkWidth = Math.round((re ? 12 : 6) * CHAR_W + 16);
        this.btnSearch.firstChild.setAttribute("width", this.btnSearch.fkWidth);
        this.btnSearch.childNodes[1].setAttribute("x", this.btnSearch.fkWidth / 2);
        this.redraw();
        this.updateMatched();
        this.save();
    };

    /* Samples with a matching frame, each once (a match inside a match is
     * not counted again), in all and in the zoomed frame. */
    Graph.prototype.matchedIn = function (t, from, to, nm) {
        var sum = 0;
        for (var i = from; i < to;) {
            if (nm[t.name[i]]) {
                sum += t.w[i];
                i = t.end[i];
            } else {
                i++;
            }
        }
        return sum;
    };

    Graph.prototype.updateMatched = function () {
        var nm = this.nameMatch, t = this.t;
        if (!nm) {
            this.message("");
            return;
        }
        var all = this.matchedIn(t, 0, t.n, nm), s = "Matched: " + fmtCount(all, this.countname) +
            ", " + pct(all, t.w[0]);
        var z = this.main.zoom;
        if (z > 0 && this.mode === "graph") {
            var inZ = 0;
            for (var a = z; a >= 0 && !inZ; a = t.parent[a])
                if (nm[t.name[a]])
                    inZ = t.w[z];
            if (!inZ)
                inZ = this.matchedIn(t, z, t.end[z], nm);
            s += " (" + pct(inZ, t.w[z]) + " of zoom: " + (TIME_UNITS[this.countname] ?
                fmtCount(inZ, this.countname) : fmtInt(inZ)) + ")";
        }
        this.message(s);
    };

    /* ---- state in the URL fragment (a document of its own only) ---- */

    Graph.prototype.params = function () {
        var out = {}, loc = this.win.location;
        (loc.search.slice(1) + "&" + loc.hash.slice(1)).split("&").forEach(function (p) {
            var k = p.indexOf("=");
            if (k > 0) {
                try {
                    out[p.slice(0, k)] = decodeURIComponent(p.slice(k + 1));
                } catch (e) { /* ignore malformed escapes */ }
            }
        });
        return out;
    };

    Graph.prototype.save = function () {
        var s = [];
        if (this.main.zoom > 0)
            s.push("x=" + this.main.zoom);
        if (this.query)
            s.push("s=" + encodeURIComponent(this.query));
        if (this.ignoreCase)
            s.push("i=1");
        var h = s.join("&");
        this.root.setAttribute("data-state", h);
        if (!this.standalone)
            return;
        try {
            var loc = this.win.location;
            this.win.history.replaceState(null, "", loc.pathname + loc.search + (h ? "#" + h : ""));
        } catch (e) { /* some embedders refuse; the state is still in data-state */ }
    };

    Graph.prototype.restore = function () {
        var p = this.params(), x = parseInt(p.x, 10);
        if (p.i === "1")
            this.toggleCase();
        if (x > 0 && x < this.t.n)
            this.main.zoom = x;
        if (p.s)
            this.search(p.s);
    };

    /* ---- panels (info, help, top functions) ---- */

    Graph.prototype.closePanel = function () {
        var kind = this.panelKind;
        this.panelKind = null;
        this.panel.setAttribute("class", "fk-panel hide");
        while (this.panel.firstChild)
            this.panel.removeChild(this.panel.firstChild);
        var b = kind === "top" ? this.btnTop : kind === "info" ? this.btnInfo : kind === "help" ? this.btnHelp : null;
        if (b) {
            b.setAttribute("class", "fk-btn");
            if (b.focus)
                b.focus({ preventScroll: true });
        }
    };

    Graph.prototype.openPanel = function (kind, lines, build) {
        if (this.panelKind)
            this.closePanel();
        this.panelKind = kind;
        this.panel.setAttribute("class", "fk-panel");
        this.panelBg = el("rect", { "class": "fk-panel-bg", x: XPAD, y: 0, width: this.W - 2 * XPAD }, this.panel);
        var h = build.call(this, this.panel);
        this.panelBg.setAttribute("height", h);
        this.panelH = h;
        var b = kind === "top" ? this.btnTop : kind === "info" ? this.btnInfo : this.btnHelp;
        if (b)
            b.setAttribute("class", "fk-btn on");
        this.placePanel();
    };

    /* panels open where the user is: under the toolbar in the window */
    Graph.prototype.placePanel = function () {
        if (!this.panelKind)
            return;
        var y = Math.min(this.visTop + BAR_H + 4, Math.max(0, this.H - this.panelH - 4));
        this.panel.setAttribute("transform", "translate(0," + y + ")");
    };

    Graph.prototype.textPanel = function (kind, lines) {
        var W = this.W;
        this.openPanel(kind, lines, function (p) {
            var max = Math.max(10, Math.floor((W - 2 * XPAD - 20) / 7.3));
            lines.forEach(function (l, i) {
                el("text", { x: XPAD + 8, y: 18 + 16 * i }, p, cut(l, max));
            });
            return 16 * lines.length + 12;
        });
    };

    Graph.prototype.toggleInfo = function () {
        if (this.panelKind === "info") {
            this.closePanel();
            return;
        }
        if (!this.meta)
            return;
        var obj, lines = [];
        try {
            obj = JSON.parse(this.meta.textContent || "{}");
        } catch (e) {
            obj = { error: "metadata is not valid JSON" };
        }
        (function flat(o, prefix) {
            Object.keys(o).forEach(function (k) {
                var v = o[k];
                if (v && typeof v === "object" && !Array.isArray(v))
                    flat(v, prefix + k + ".");
                else
                    lines.push(prefix + k + ": " + (typeof v === "string" ? v : JSON.stringify(v)));
            });
        })(obj && typeof obj === "object" ? obj : { value: obj }, "");
        if (!lines.length)
            lines.push("(no capture details)");
        this.textPanel("info", lines);
    };

    Graph.prototype.toggleHelp = function () {
        if (this.panelKind === "help") {
            this.closePanel();
            return;
        }
        this.textPanel("help", [
            "click a frame: zoom into it (click a faded frame below: zoom out)",
            "Alt/Shift-click, right-click or s over a frame: its callers and callees",
            "Ctrl-F, / or F3: search (regular expression); Alt-C: ignore case on/off",
            "t: top functions (self and total); click a row: search it",
            (this.meta ? "i: capture details; " : "") + "Esc: close, clear the search, reset the zoom",
            "Tab / Shift-Tab: move between the buttons; Enter or Space: press"
        ]);
    };

    /* Self and total per function in the zoomed subtree: self is where the
     * samples ended, total every sample with the function on the stack
     * (once, however deep it recurses). */
    Graph.prototype.functionTable = function () {
        var t = this.t, z = this.mode === "graph" ? this.main.zoom : 0, m = this.names.length;
        var self = new Float64Array(m), total = new Float64Array(m), act = new Int32Array(m);
        var oself = t.o ? new Float64Array(m) : null, ototal = t.o ? new Float64Array(m) : null;
        var stack = [], end = t.end[z];
        /* the root ("all") is not a function; a zoomed frame is */
        for (var i = z === 0 ? 1 : z; i < end; i++) {
            while (stack.length && t.end[stack[stack.length - 1]] <= i)
                act[t.name[stack.pop()]]--;
            var id = t.name[i], p = t.parent[i];
            if (!act[id]) {
                total[id] += t.w[i];
                if (ototal)
                    ototal[id] += t.o[i];
            }
            act[id]++;
            stack.push(i);
            self[id] += t.w[i];
            if (oself)
                oself[id] += t.o[i];
            if (i > z && p > 0) {
                self[t.name[p]] -= t.w[i];
                if (oself)
                    oself[t.name[p]] -= t.o[i];
            }
        }
        var rows = [];
        for (var k = 0; k < m; k++)
            if (total[k] > 0 || (ototal && ototal[k] > 0))
                rows.push({ id: k, self: self[k], total: total[k], oself: oself ? oself[k] : 0, ototal: ototal ? ototal[k] : 0 });
        return { rows: rows, zoom: z, all: t.w[z] };
    };

    Graph.prototype.toggleTop = function () {
        if (this.panelKind === "top") {
            this.closePanel();
            return;
        }
        this.topSort = this.topSort || "self";
        this.topPage = 0;
        this.renderTop();
    };

    Graph.prototype.renderTop = function () {
        var g = this, ft = this.functionTable(), key = this.topSort, names = this.names;
        var diff = !!this.diffMode;
        ft.rows.sort(function (a, b) {
            if (key === "name")
                return names[a.id] < names[b.id] ? -1 : names[a.id] > names[b.id] ? 1 : 0;
            var d = key === "change" ? Math.abs(b.total - b.ototal) - Math.abs(a.total - a.ototal) : b[key] - a[key];
            return d || b.total - a.total || a.id - b.id;
        });
        var per = Math.max(5, Math.min(25, Math.floor((this.visBottom - this.visTop - BAR_H - 120) / 18)));
        var pages = Math.max(1, Math.ceil(ft.rows.length / per));
        this.topPage = Math.max(0, Math.min(this.topPage, pages - 1));
        var first = this.topPage * per, shown = ft.rows.slice(first, first + per);
        var focusedRow = this.doc.activeElement && this.doc.activeElement.fkRow;
        this.openPanel("top", null, function (p) {
            var W = g.W, x0 = XPAD + 8, y = 20, timed = !!TIME_UNITS[g.countname];
            var head = "Top functions" + (ft.zoom ? " in zoomed " + cut(names[g.t.name[ft.zoom]], 40) : "") + ": " +
                fmtInt(ft.rows.length) + " functions, " + fmtCount(ft.all, g.countname) +
                " \u2014 click a row to search it, \u21c5 for callers and callees";
            el("text", { x: x0, y: y }, p, cut(head, Math.floor((W - 40) / 7.3)));
            y += 22;
            var cols = [{ k: "self", label: "Self", x: x0 + 150 }, { k: "total", label: "Total", x: x0 + 300 }];
            if (diff)
                cols.push({ k: "change", label: "Change", x: x0 + 470 });
            var nameX = diff ? x0 + 520 : x0 + 350;
            cols.push({ k: "name", label: "Function", x: nameX, left: true });
            cols.forEach(function (c) {
                var th = el("text", { "class": "fk-th" + (c.left ? "" : " fk-num") + (key === c.k ? " on" : ""),
                    x: c.x, y: y, tabindex: "0", role: "button",
                    "aria-label": "Sort by " + c.label.toLowerCase() }, p, c.label + (key === c.k ? " \u25bc" : ""));
                var sortBy = function (e) {
                    e.stopPropagation();
                    g.topSort = c.k;
                    g.topPage = 0;
                    g.renderTop();
                    var again = g.panel.querySelector(".fk-th.on");
                    if (again && again.focus)
                        again.focus({ preventScroll: true });
                };
                th.addEventListener("click", sortBy);
                th.addEventListener("keydown", function (e) {
                    if (e.key === "Enter" || e.key === " ") {
                        e.preventDefault();
                        sortBy(e);
                    }
                });
            });
            y += 6;
            shown.forEach(function (r, idx) {
                y += 18;
                var row = el("g", { "class": "fk-row", tabindex: "0", role: "button",
                    "aria-label": names[r.id] + ": self " + pct(r.self, ft.all) + ", total " + pct(r.total, ft.all) }, p);
                row.fkRow = first + idx + 1;
                row.fkName = r.id;
                el("rect", { x: XPAD + 2, y: y - 13, width: W - 2 * XPAD - 4, height: 17 }, row);
                el("text", { "class": "fk-num", x: x0 + 70, y: y }, row, pct(r.self, ft.all));
                el("text", { "class": "fk-num", x: x0 + 150, y: y }, row, timed ? fmtCount(r.self, g.countname) : fmtInt(r.self));
                el("text", { "class": "fk-num", x: x0 + 220, y: y }, row, pct(r.total, ft.all));
                el("text", { "class": "fk-num", x: x0 + 300, y: y }, row, timed ? fmtCount(r.total, g.countname) : fmtInt(r.total));
                if (diff) {
                    var neg = g.diffMode === 2, after = (neg ? r.ototal : r.total) * g.scale2,
                        before = (neg ? r.total : r.ototal) * g.scale1;
                    el("text", { "class": "fk-num", x: x0 + 470, y: y }, row, relChange(after, before));
                }
                var sw = el("text", { x: x0 + 315, y: y, "class": "fk-sw", role: "button", "aria-label": "callers and callees" }, row, "\u21c5");
                el("text", { x: nameX, y: y }, row, cut(names[r.id], Math.max(10, Math.floor((W - nameX - 20) / 7.3))));
                var act = function (e, sandwich) {
                    e.stopPropagation();
                    if (sandwich) {
                        g.closePanel();
                        g.openSandwich(r.id);
                    } else {
                        g.closePanel();
                        if (g.mode === "sandwich")
                            g.closeSandwich();
                        g.search("^" + reEscape(names[r.id]) + "$");
                    }
                };
                row.addEventListener("click", function (e) { act(e, e.target === sw || e.altKey || e.shiftKey); });
                row.addEventListener("keydown", function (e) {
                    if (e.key === "Enter" || e.key === " ") {
                        e.preventDefault();
                        act(e, e.shiftKey || e.altKey);
                    } else if (e.key === "s" || e.key === "S") {
                        e.preventDefault();
                        act(e, true);
                    } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
                        e.preventDefault();
                        var sib = e.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling;
                        if (sib && sib.fkRow && sib.focus)
                            sib.focus({ preventScroll: true });
                    }
                });
            });
            y += 26;
            var nav = el("g", {}, p);
            el("text", { x: x0, y: y }, nav, "rows " + fmtInt(ft.rows.length ? first + 1 : 0) + "\u2013" +
                fmtInt(first + shown.length) + " of " + fmtInt(ft.rows.length));
            var bx = x0 + 200;
            if (g.topPage > 0) {
                var prev = g.button(nav, "\u25c0 Previous", "Previous rows", function () { g.topPage--; g.renderTop(); });
                prev.setAttribute("transform", "translate(" + bx + "," + (y - 15) + ")");
                bx += prev.fkWidth + 8;
            }
            if (g.topPage < pages - 1) {
                var next = g.button(nav, "Next \u25b6", "Next rows", function () { g.topPage++; g.renderTop(); });
                next.setAttribute("transform", "translate(" + bx + "," + (y - 15) + ")");
            }
            return y + 14;
        });
        if (focusedRow) {
            var again = this.panel.querySelector(".fk-row");
            if (again && again.focus)
                again.focus({ preventScroll: true });
        }
    };

    /* ---- callers and callees of one function ("sandwich") ---- */

    /* A merged tree from (path, counts) insertions, flattened to a Tree
     * with children in name order; nameIds maps its nodes to name ids. */
    function Merger(rootName) {
        this.nodes = [{ id: rootName, kids: null, w: 0, o: 0 }];
    }
    Merger.prototype.child = function (n, id) {
        var node = this.nodes[n];
        if (!node.kids)
            node.kids = new Map();
        var c = node.kids.get(id);
        if (c === undefined) {
            c = this.nodes.length;
            this.nodes.push({ id: id, kids: null, w: 0, o: 0 });
            node.kids.set(id, c);
        }
        return c;
    };
    Merger.prototype.tree = function (names, diff) {
        var nodes = this.nodes, t = new Tree(nodes.length, diff), ids = new Int32Array(nodes.length);
        var k = 0, stack = [[0, 0, -1]];
        while (stack.length) {
            var top = stack.pop(), n = nodes[top[0]], me = k++;
            ids[me] = n.id;
            t.name[me] = me;
            t.depth[me] = top[1];
            t.parent[me] = top[2];
            t.w[me] = n.w;
            if (diff)
                t.o[me] = n.o;
            if (n.kids) {
                var kids = Array.from(n.kids.values());
                kids.sort(function (a, b) {
                    var x = names[nodes[a].id], y = names[nodes[b].id];
                    return x < y ? 1 : x > y ? -1 : 0;    /* reversed: popped in order */
                });
                for (var i = 0; i < kids.length; i++)
                    stack.push([kids[i], top[1] + 1, me]);
            }
        }
        t.finish();
        return { t: t, ids: ids };
    };

    Graph.prototype.openSandwich = function (nameId) {
        var t = this.t, diff = !!this.diffMode;
        var callers = new Merger(nameId), callees = new Merger(nameId), map = new Int32Array(t.n);
        for (var i = 0; i < t.n;) {
            if (t.name[i] !== nameId) {
                i++;
                continue;
            }
            /* an outermost call: its samples once, with its stack below */
            var w = t.w[i], o = diff ? t.o[i] : 0, c = 0;
            callers.nodes[0].w += w;
            callers.nodes[0].o += o;
            for (var p = t.parent[i]; p > 0; p = t.parent[p]) {
                c = callers.child(c, t.name[p]);
                callers.nodes[c].w += w;
                callers.nodes[c].o += o;
            }
            callees.nodes[0].w += w;
            callees.nodes[0].o += o;
            map[i] = 0;
            for (var j = i + 1; j < t.end[i]; j++) {
                var m = callees.child(map[t.parent[j]], t.name[j]);
                map[j] = m;
                callees.nodes[m].w += t.w[j];
                callees.nodes[m].o += diff ? t.o[j] : 0;
            }
            i = t.end[i];
        }
        if (callers.nodes[0].w <= 0 && !(diff && callers.nodes[0].o > 0))
            return;
        this.closePanel();
        var a = callers.tree(this.names, diff), b = callees.tree(this.names, diff);
        if (!this.swGroup) {
            this.swGroup = el("g", { "class": "fk-frames fk-sandwich" }, null);
            this.root.insertBefore(this.swGroup, this.frames.nextSibling);
            this.swLabels = el("g", {}, this.swGroup);
        }
        while (this.swGroup.lastChild !== this.swLabels)
            this.swGroup.removeChild(this.swGroup.lastChild);
        this.swCallers = el("g", {}, this.swGroup);
        this.swCallees = el("g", {}, this.swGroup);
        var va = new View(this, a.t, this.swCallers, null), vb = new View(this, b.t, this.swCallees, null);
        va.nameIds = a.ids;
        vb.nameIds = b.ids;
        va.callers = true;
        this.swCallers.fkView = va;
        this.swCallees.fkView = vb;
        /* names of merged nodes: look through nameIds */
        va.t.name = a.ids;
        vb.t.name = b.ids;
        this.sw = { name: nameId, callers: va, callees: vb };
        this.mode = "sandwich";
        this.frames.setAttribute("class", "fk-frames hide");
        this.swGroup.setAttribute("class", "fk-frames fk-sandwich");
        this.redraw();
        this.updateMatched();
        var W = this.W;
        this.details.textContent = cut(this.names[nameId] + ": " + fmtCount(a.t.w[0], this.countname) + " (" +
            pct(a.t.w[0], this.t.w[0]) + "), callers above, callees below", Math.floor((W - 2 * XPAD) * 0.66 / CHAR_W));
        /* show where the two halves meet */
        if (this.standalone) {
            var mid = this.swMid - this.win.innerHeight / 2;
            this.win.scrollTo(0, Math.max(0, mid));
        }
        this.stick();
    };

    Graph.prototype.renderSandwich = function () {
        var sw = this.sw, fh = this.fh, a = sw.callers, b = sw.callees;
        var rowsA = this.maxRows(a), rowsB = this.maxRows(b), gap = 22;
        var top = this.ytop + 20;
        var H = top + rowsA * fh + gap + rowsB * fh + this.ybottom;
        this.setHeight(H);
        a.up = true;
        a.y0 = top + (rowsA - 1) * fh;
        b.up = false;
        b.y0 = a.y0 + fh + gap;
        this.swMid = a.y0 + fh + gap / 2;
        a.render(this.W);
        b.render(this.W);
        while (this.swLabels.firstChild)
            this.swLabels.removeChild(this.swLabels.firstChild);
        var name = cut(this.names[sw.name], 60);
        el("text", { "class": "fk-sw-label", x: XPAD, y: top - 6 }, this.swLabels,
            "callers of " + name + " (each caller above the function it calls)");
        el("text", { "class": "fk-sw-label", x: XPAD, y: b.y0 - 6 }, this.swLabels,
            "callees of " + name + " (each callee below its caller)");
    };

    Graph.prototype.closeSandwich = function () {
        if (this.mode !== "sandwich")
            return;
        this.mode = "graph";
        this.sw.callers.hideAll();
        this.sw.callees.hideAll();
        this.swGroup.setAttribute("class", "fk-frames fk-sandwich hide");
        this.frames.setAttribute("class", "fk-frames");
        this.redraw();
        this.updateMatched();
        if (this.standalone && !this.inverted)
            this.win.scrollTo(0, this.H);
        this.stick();
    };

    function start() {
        try {
            new Graph(svgRoot);
        } catch (e) {
            svgRoot.setAttribute("data-error", String(e && e.message || e));
            throw e;
        }
    }
    if (document.readyState === "loading")
        document.addEventListener("DOMContentLoaded", start);
    else
        start();
})();
