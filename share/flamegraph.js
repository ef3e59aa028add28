/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit flame graph script (compiled into every SVG flamekit writes).
 * The renderer writes frames in pre-order; we rebuild the tree from that:
 * depth from the rect's y, count from the title's " (N ..." suffix, offset
 * from the previous sibling unless data-o gives it (pruned siblings). */
"use strict";
(function () {
    var NS = "http://www.w3.org/2000/svg";
    var CHAR_W = 12 * 0.59;
    var svg, frames = [], root = null, zoomed = null, query = "", info = null;
    var W, xpad, fh, y0, dy, minw, nametype, testing = false, testArgs = {};
    var details, matched, unzoomBtn, searchBtn, infoBtn, infoPanel;

    function num(el, name) { return parseFloat(el.getAttribute(name)); }
    function pct(n, d) { return d > 0 ? (100 * n / d).toFixed(2) + "%" : "0.00%"; }
    function byId(id) { return document.getElementById(id); }

    function init() {
        svg = document.documentElement;
        W = num(svg, "width");
        xpad = num(svg, "data-xpad");
        fh = num(svg, "data-fh");
        y0 = num(svg, "data-y0");
        dy = num(svg, "data-dy");
        minw = num(svg, "data-minw") || 0;
        nametype = svg.getAttribute("data-nametype") || "";
        details = byId("fk-details");
        matched = byId("fk-matched");
        unzoomBtn = byId("fk-unzoom");
        searchBtn = byId("fk-search");
        infoBtn = byId("fk-infobtn");
        infoPanel = byId("fk-info");
        var group = byId("fk-frames");
        if (!group)
            return;
        var open = [];      /* open[d] = latest frame at depth d */
        var gs = group.children;
        for (var i = 0; i < gs.length; i++) {
            var g = gs[i], t = g.firstElementChild, rect = g.querySelector("rect");
            if (!t || !rect)
                continue;
            var title = t.textContent, k = title.lastIndexOf(" (");
            var depth = Math.round((num(rect, "y") - y0) / dy);
            var parent = depth > 0 ? open[depth - 1] : null;
            var f = {
                i: frames.length, g: g, rect: rect, text: g.querySelector("text"),
                title: title, name: k >= 0 ? title.slice(0, k) : title,
                n: k >= 0 ? parseInt(title.slice(k + 2).replace(/,/g, ""), 10) : 0,
                depth: depth, parent: parent, last: null, end: 0, off: 0,
                ty: num(rect, "y") + fh / 2 + 3.5
            };
            if (g.hasAttribute("data-o"))
                f.off = num(g, "data-o");
            else if (parent)
                f.off = parent.last ? parent.last.off + parent.last.n : parent.off;
            if (parent)
                parent.last = f;
            for (var d = depth; d < open.length; d++)
                open[d].end = f.i;
            open.length = depth;
            open[depth] = f;
            g.fkIndex = f.i;
            frames.push(f);
        }
        for (var j = 0; j < open.length; j++)
            open[j].end = frames.length;
        root = frames[0] || null;
        zoomed = root;

        group.addEventListener("click", function (e) {
            var f = frameOf(e.target);
            if (f)
                zoom(f);
        });
        group.addEventListener("mouseover", function (e) {
            var f = frameOf(e.target);
            if (f)
                show(f);
        });
        group.addEventListener("mouseout", function () { details.textContent = " "; });
        unzoomBtn.addEventListener("click", function () { zoom(root); });
        searchBtn.addEventListener("click", function () {
            if (query)
                search("");
            else
                askSearch();
        });
        if (infoBtn)
            infoBtn.addEventListener("click", toggleInfo);
        window.addEventListener("keydown", key);
        restore();
        if (testing)
            selfTest();
    }

    function frameOf(el) {
        while (el && el.fkIndex === undefined)
            el = el.parentNode;
        return el ? frames[el.fkIndex] : null;
    }

    /* Status bar: name, count, share of all and of the zoomed frame. */
    function show(f) {
        var s = nametype + " " + f.title;
        if (zoomed && zoomed !== root && f.i >= zoomed.i && f.i < zoomed.end)
            s += " [" + pct(f.n, zoomed.n) + " of zoomed " + zoomed.name + "]";
        /* keep clear of the matched share on the right */
        var max = Math.floor((W - 2 * xpad) * 0.75 / CHAR_W);
        if (s.length > max)
            s = s.slice(0, max - 2) + "..";
        details.textContent = s;
    }

    function label(f, x, w) {
        var chars = Math.floor((w - 6) / CHAR_W), s = "";
        if (chars >= 3) {
            s = f.name;
            if (s.length > chars) {
                var cps = Array.from(s);
                if (cps.length > chars)
                    s = cps.slice(0, chars - 2).join("") + "..";
            }
        }
        if (!f.text) {
            if (!s)
                return;
            f.text = document.createElementNS(NS, "text");
            f.text.setAttribute("y", f.ty);
            f.g.appendChild(f.text);
        }
        f.text.setAttribute("x", (x + 3).toFixed(1));
        f.text.textContent = s;
    }

    function place(f, x, w) {
        f.rect.setAttribute("x", x.toFixed(1));
        f.rect.setAttribute("width", w.toFixed(1));
        label(f, x, w);
    }

    /* Zoom: f spans the width, its ancestors stay (faded), others hide. */
    function zoom(f) {
        if (!f)
            return;
        zoomed = f;
        var scale = (W - 2 * xpad) / f.n, anc = {};
        for (var a = f.parent; a; a = a.parent)
            anc[a.i] = true;
        for (var i = 0; i < frames.length; i++) {
            var g = frames[i];
            if (i >= f.i && i < f.end) {
                var w = g.n * scale;
                if (w < minw) {
                    g.g.classList.add("hide");
                    continue;
                }
                g.g.classList.remove("hide", "anc");
                place(g, xpad + (g.off - f.off) * scale, w);
            } else if (anc[i]) {
                g.g.classList.remove("hide");
                g.g.classList.add("anc");
                place(g, xpad, W - 2 * xpad);
            } else {
                g.g.classList.add("hide");
            }
        }
        unzoomBtn.classList.toggle("hide", f === root);
        if (query)
            search(query);
        save();
    }

    /* Highlight frames matching the regex; matched share counts only the
     * outermost matches, so nested matches are not counted twice. */
    function search(q) {
        query = q || "";
        var re = null;
        if (query) {
            try {
                /* "(?i)" in front: ignore case (JavaScript has no inline flags) */
                re = query.indexOf("(?i)") === 0 ? new RegExp(query.slice(4), "i") : new RegExp(query);
            } catch (e) {
                matched.textContent = "bad regex: " + query;
                query = "";
            }
        }
        var all = 0, inZoom = 0, skip = 0, z = zoomed || root, zAncMatch = false;
        for (var i = 0; i < frames.length; i++) {
            var f = frames[i], m = re !== null && re.test(f.name);
            f.g.classList.toggle("match", m);
            if (!m || i < skip)
                continue;
            skip = f.end;
            all += f.n;
            if (i >= z.i && i < z.end)
                inZoom += f.n;
            else if (i < z.i && z.i < f.end)
                zAncMatch = true;
        }
        if (re) {
            var s = "Matched: " + pct(all, root ? root.n : 0);
            if (z && z !== root)
                s += " (" + pct(zAncMatch ? z.n : inZoom, z.n) + " of zoom)";
            matched.textContent = s;
            searchBtn.textContent = "Reset Search";
        } else {
            if (!query && matched.textContent.indexOf("bad regex") !== 0)
                matched.textContent = " ";
            searchBtn.textContent = "Search";
        }
        save();
    }

    function askSearch() {
        var q = window.prompt("Search frames (regular expression)", query);
        if (q !== null)
            search(q);
    }

    function toggleInfo() {
        if (!infoPanel)
            return;
        if (!info) {
            var meta = byId("fk-meta"), obj = {};
            try {
                obj = JSON.parse(meta ? meta.textContent : "{}");
            } catch (e) {
                obj = { error: "metadata is not valid JSON" };
            }
            var lines = [];
            (function flat(o, prefix) {
                Object.keys(o).forEach(function (k) {
                    var v = o[k];
                    if (v && typeof v === "object" && !Array.isArray(v))
                        flat(v, prefix + k + ".");
                    else
                        lines.push(prefix + k + ": " + (typeof v === "string" ? v : JSON.stringify(v)));
                });
            })(obj && typeof obj === "object" ? obj : { value: obj }, "");
            var max = Math.max(10, Math.floor((W - 2 * xpad - 20) / 7.3));
            var bg = document.createElementNS(NS, "rect");
            bg.setAttribute("x", xpad);
            bg.setAttribute("y", 40);
            bg.setAttribute("width", W - 2 * xpad);
            bg.setAttribute("height", 16 * lines.length + 12);
            infoPanel.appendChild(bg);
            lines.forEach(function (l, i) {
                var t = document.createElementNS(NS, "text");
                t.setAttribute("x", xpad + 8);
                t.setAttribute("y", 58 + 16 * i);
                t.textContent = l.length > max ? l.slice(0, max - 2) + ".." : l;
                infoPanel.appendChild(t);
            });
            info = lines;
        }
        infoPanel.classList.toggle("hide");
    }

    function key(e) {
        if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F") || e.key === "F3" ||
            (e.key === "/" && !e.ctrlKey)) {
            e.preventDefault();
            askSearch();
        } else if (e.key === "Escape") {
            if (infoPanel && !infoPanel.classList.contains("hide"))
                infoPanel.classList.add("hide");
            else if (zoomed !== root)
                zoom(root);
            else
                search("");
        } else if ((e.key === "i" || e.key === "I") && !e.ctrlKey && !e.metaKey) {
            toggleInfo();
        }
    }

    /* State in the URL fragment: #x=FRAME&s=REGEX. */
    function params() {
        var out = {}, parts = (location.search.slice(1) + "&" + location.hash.slice(1)).split("&");
        parts.forEach(function (p) {
            var k = p.indexOf("=");
            if (k > 0) {
                try {
                    out[p.slice(0, k)] = decodeURIComponent(p.slice(k + 1));
                } catch (e) { /* ignore malformed escapes */ }
            }
        });
        return out;
    }

    function save() {
        var s = [];
        if (zoomed && zoomed !== root)
            s.push("x=" + zoomed.i);
        if (query)
            s.push("s=" + encodeURIComponent(query));
        if (testing)
            s.push("fktest=" + encodeURIComponent(testArgs.fktest));
        var h = s.join("&");
        svg.setAttribute("data-state", h);
        try {
            history.replaceState(null, "", location.pathname + location.search + (h ? "#" + h : ""));
        } catch (e) { /* some embedders refuse; the state is still in data-state */ }
    }

    function restore() {
        var p = params();
        testing = p.fktest !== undefined && p.fktest !== "";
        testArgs = p;
        var x = parseInt(p.x, 10);
        if (x > 0 && x < frames.length)
            zoom(frames[x]);
        if (p.s)
            search(p.s);
    }

    /* Test hook (URL "#fktest=NAME/REGEX&fkhover=NAME&fkkeys=K,K"): click the
     * first frame named NAME with a real DOM event, search REGEX through the
     * Ctrl-F handler, hover a frame, then press the keys. */
    function selfTest() {
        var arg = testArgs.fktest, k = arg.indexOf("/");
        var name = k >= 0 ? arg.slice(0, k) : arg, re = k >= 0 ? arg.slice(k + 1) : "";
        var target = null;
        for (var i = 0; i < frames.length && !target; i++)
            if (frames[i].name === name)
                target = frames[i];
        if (target)
            target.rect.dispatchEvent(new MouseEvent("click", { bubbles: true }));
        if (re) {
            window.prompt = function () { return re; };
            window.dispatchEvent(new KeyboardEvent("keydown", { key: "f", ctrlKey: true, bubbles: true }));
        }
        /* hover the first frame named in "fkhover=NAME" */
        for (var h = 0; h < frames.length && testArgs.fkhover; h++) {
            if (frames[h].name === testArgs.fkhover) {
                frames[h].rect.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
                break;
            }
        }
        /* then the keys named in "fkkeys=KEY,KEY" (e.g. i, Escape) */
        (testArgs.fkkeys || "").split(",").forEach(function (k) {
            if (k)
                window.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
        });
        svg.setAttribute("data-fktest", target ? "clicked " + target.i : "no frame " + name);
    }

    window.addEventListener("load", init);
})();
