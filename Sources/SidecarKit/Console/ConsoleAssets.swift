import HTTPServer

/// The console's one stylesheet and its small script, served from the
/// binary (no build step, no third-party code).
enum ConsoleAssets {
    static func routes() -> [Route] {
        [
            asset("/admin/static/console.css", "text/css; charset=utf-8", stylesheet),
            asset("/admin/static/console.js", "text/javascript; charset=utf-8", script),
        ]
    }

    static func asset(_ path: String, _ contentType: String, _ text: String) -> Route {
        let body = Array(text.utf8)
        return Route("GET", path, parsesParameters: false) { _ in
            Response.bytes(200, contentType: contentType, body)
                .adding(header: "Cache-Control", "public, max-age=3600")
                .adding(header: "X-Content-Type-Options", "nosniff")
        }
    }

    /// System fonts, a readable measure, WCAG AA contrast (body text
    /// #1f2328 on white is 15.8:1; links #0b57d0 7.0:1; muted #57606a 6.4:1),
    /// visible focus, and layouts that reflow on a phone.
    static let stylesheet = """
        :root { --ink: #1f2328; --muted: #57606a; --line: #d0d7de; --paper: #ffffff; --wash: #f6f8fa; --accent: #0b57d0;
                --accent-ink: #ffffff; --danger: #b42318; --ok: #1a7f37; --warn: #9a6700; --focus: #1f2328; }
        * { box-sizing: border-box; }
        html { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; font-size: 100%; line-height: 1.5;
               color: var(--ink); background: var(--paper); }
        body { margin: 0; }
        a { color: var(--accent); }
        /* The ring is near-black (15.8:1 on white, 4.1:1 on the accent blue), with a white gap so it also shows against a button. */
        :focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; box-shadow: 0 0 0 2px var(--paper); }
        .skip { position: absolute; left: -999px; top: 0; background: var(--paper); padding: .5rem 1rem; }
        .skip:focus { left: .5rem; z-index: 10; }
        header.top { display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: center; padding: .75rem 1.25rem;
                     border-bottom: 1px solid var(--line); background: var(--wash); }
        .brand { font-weight: 700; text-decoration: none; color: var(--ink); font-size: 1.1rem; }
        .who { margin-left: auto; display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
        .badge { display: inline-block; padding: 0 .5rem; border-radius: 1rem; background: #ddf4ff; color: #0a3069; font-size: .85rem; }
        .badge.draft { background: #eaeef2; color: #24292f; } .badge.live { background: #dafbe1; color: #116329; }
        .badge.withdrawn { background: #fff1e5; color: #953800; }
        .badge.upcoming { background: #fff8c5; color: #7d4e00; } .badge.ended { background: #ffebe9; color: #82071e; }
        .badge.stale { background: #fff8c5; color: #7d4e00; } .badge.test { background: #fbefff; color: #6e40c9; }
        details.regions summary { cursor: pointer; }
        details.regions ul { position: absolute; background: var(--paper); border: 1px solid var(--line); list-style: none; padding: .5rem; margin: 0;
                             z-index: 5; max-height: 60vh; overflow: auto; }
        nav ul { display: flex; flex-wrap: wrap; gap: .25rem; list-style: none; margin: 0; padding: .5rem 1.25rem; border-bottom: 1px solid var(--line); }
        nav a { display: inline-block; padding: .4rem .75rem; border-radius: .4rem; text-decoration: none; }
        nav a[aria-current="page"] { background: var(--accent); color: var(--accent-ink); }
        main { max-width: 72rem; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
        main.narrow { max-width: 28rem; }
        h1 { font-size: 1.6rem; margin: .5rem 0 1rem; } h2 { font-size: 1.25rem; margin-top: 2rem; } h3 { font-size: 1.05rem; }
        .grid { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(15rem, 1fr)); list-style: none; padding: 0; }
        .card { border: 1px solid var(--line); border-radius: .5rem; padding: 1rem; background: var(--paper); }
        .card h2 { margin: 0 0 .25rem; font-size: 1rem; color: var(--muted); }
        .card .figure { font-size: 2rem; font-weight: 700; margin: 0 0 .5rem; }
        figure { margin: 0; }
        fieldset { border: 1px solid var(--line); border-radius: .5rem; margin: 0 0 1rem; }
        .card dl { display: grid; grid-template-columns: auto auto; gap: .1rem 1rem; margin: 0; } .card dd { margin: 0; text-align: right; }
        .apps { border-left: 4px solid #b26b00; background: #fff8ec; padding: .2rem .8rem; margin: .8rem 0; }
        .apps h2 { font-size: 1rem; margin: .4rem 0; } .apps ul { margin: .2rem 0 .4rem; padding-left: 1.2rem; }
        .checks { border-left: 4px solid #8a6d00; background: #fffbe6; padding: .2rem .8rem .6rem; margin: .8rem 0; }
        .checks h2 { font-size: 1rem; margin: .4rem 0; } .checks ul { margin: .2rem 0 .6rem; padding-left: 1.2rem; }
        .checks li.error { color: #a4161a; } .checks code { font-size: .8rem; color: #555; }
        .card dl.facts { grid-template-columns: 1fr; } .card dl.facts dt { font-weight: 600; margin-top: .4rem; } .card dl.facts dd { text-align: left; }
        code, dd, .card h3, td:last-child { overflow-wrap: anywhere; } td { overflow-wrap: break-word; }
        form.filters { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(12rem, 100%), 1fr)); gap: 0 1rem; align-items: start; }
        form.filters .actions { grid-column: 1 / -1; }
        .columns { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(min(20rem, 100%), 1fr)); align-items: start; }
        .field { margin: 0 0 1rem; display: flex; flex-direction: column; gap: .25rem; }
        .field.check { flex-direction: row; flex-wrap: wrap; align-items: center; gap: .5rem; }
        .field.check .hint { flex-basis: 100%; margin: 0 0 0 1.6rem; }
        label { font-weight: 600; } .required { font-weight: 400; color: var(--muted); }
        input, select, textarea { font: inherit; padding: .5rem .6rem; border: 1px solid #8c959f; border-radius: .4rem; background: var(--paper);
                                  color: var(--ink); max-width: 100%; }
        input[type=checkbox] { width: 1.2rem; height: 1.2rem; }
        textarea { width: 100%; }
        .hint { margin: 0; color: var(--muted); font-size: .9rem; }
        button, .button { font: inherit; display: inline-block; padding: .5rem 1rem; border-radius: .4rem; border: 1px solid var(--accent);
                          background: var(--accent); color: var(--accent-ink); cursor: pointer; text-decoration: none; }
        button.secondary, .button.secondary { background: var(--paper); color: var(--accent); }
        button.danger { background: var(--danger); border-color: var(--danger); color: #fff; }
        button.link { border: none; background: none; color: var(--accent); padding: 0 .25rem; text-decoration: underline; }
        form.inline { display: inline; }
        .actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: 1rem 0; }
        .notice { padding: .75rem 1rem; border-left: 4px solid var(--ok); background: #dafbe1; }
        .problems { padding: .75rem 1rem; border-left: 4px solid var(--danger); background: #ffebe9; margin-bottom: 1rem; }
        .problems p { margin: 0; font-weight: 600; }
        .table-wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: .5rem; }
        table { border-collapse: collapse; width: 100%; font-size: .95rem; }
        caption { text-align: left; padding: .5rem .75rem; font-weight: 600; }
        th, td { text-align: left; padding: .5rem .75rem; border-top: 1px solid var(--line); vertical-align: top; }
        th { background: var(--wash); }
        .empty { color: var(--muted); }
        .preview { border: 1px solid var(--line); border-radius: .75rem; padding: .75rem 1rem; background: var(--wash); max-width: 24rem; }
        .preview .title { font-weight: 700; margin: 0; } .preview .body { margin: .25rem 0 0; }
        .preview .meta { font-size: .8rem; color: var(--muted); margin: 0 0 .25rem; }
        .chart svg { width: 100%; height: auto; max-height: 16rem; }
        .chart .bar { fill: var(--accent); } .chart text { fill: var(--muted); font-size: 12px; }
        /* The chart scales to the page: on a phone its 600-unit width is about 300 px, so its labels are drawn twice as large to read at about 11 px. */
        @media (max-width: 40rem) { .chart text { font-size: 22px; } }
        .chart figcaption { color: var(--muted); }
        .field-error { color: var(--danger, #b42318); font-weight: 600; margin: .1rem 0 .25rem; }
        .field.invalid input, .field.invalid textarea, .field.invalid select { border-color: var(--danger, #b42318); border-width: 2px; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
        .progress { font-variant-numeric: tabular-nums; }
        .setup { border: 2px solid var(--warn); border-radius: .5rem; padding: .5rem 1rem 1rem; background: #fff8c5; margin: 1rem 0; }
        .setup h2 { margin-top: .5rem; }
        .meter { display: block; height: .75rem; border-radius: .4rem; background: var(--wash); border: 1px solid var(--line); overflow: hidden; }
        .meter span { display: block; height: 100%; background: var(--ok); }
        .lost { padding: .5rem 1rem; border-left: 4px solid var(--warn); background: #fff8c5; }
        button[disabled] { opacity: .55; cursor: not-allowed; }
        @media (max-width: 40rem) { header.top { padding: .5rem .75rem; } main { padding: .75rem; } h1 { font-size: 1.35rem; }
                                    .who { margin-left: 0; }
                                    .table-wrap { border: none; overflow: visible; }
                                    table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
                                    table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
                                    table.stack caption { display: block; padding: .25rem 0; }
                                    table.stack tr { border: 1px solid var(--line); border-radius: .5rem; margin: 0 0 .75rem; padding: .25rem 0; }
                                    table.stack td { border: none; padding: .25rem .75rem; overflow-wrap: anywhere; }
                                    table.stack td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); } }
        """

    /// Progressive enhancement only: every page works without it. It
    /// refreshes a running send's counts once a second until it finishes
    /// (saying so when it loses the server), and disables a confirming
    /// button once pressed (the server refuses a second submission anyway).
    static let script = """
        "use strict";
        document.addEventListener("DOMContentLoaded", function () {
          // What was typed into a form survives a session that ended meanwhile:
          // each submission is kept for its page; the signed-out page marks it,
          // and the page fills it in again after the sign-in (never tokens).
          var store = window.sessionStorage;
          var secret = /^(csrf|password|login_token|send_token|key_token)$/;
          document.querySelectorAll("form[method='post']").forEach(function (form) {
            if (form.action.indexOf("/admin/login") >= 0 || form.action.indexOf("/admin/logout") >= 0) { return; }
            form.addEventListener("submit", function () {
              var fields = [];
              Array.prototype.forEach.call(form.elements, function (element) {
                if (!element.name || secret.test(element.name)) { return; }
                fields.push([element.name, element.type === "checkbox" ? (element.checked ? "true" : "") : element.value]);
              });
              try { store.setItem("sidecar-draft", JSON.stringify({ page: location.pathname, action: form.getAttribute("action"), fields: fields })); } catch (e) {}
            });
          });
          if (document.querySelector("[data-session-ended]")) {
            try { var kept = JSON.parse(store.getItem("sidecar-draft") || "null"); if (kept) { kept.restore = true; store.setItem("sidecar-draft", JSON.stringify(kept)); } } catch (e) {}
          }
          try {
            var draft = JSON.parse(store.getItem("sidecar-draft") || "null");
            if (draft && draft.restore && draft.page === location.pathname) {
              var form = document.querySelector("form[action='" + draft.action + "']");
              if (form) {
                draft.fields.forEach(function (pair) {
                  var element = form.elements.namedItem(pair[0]);
                  // A name shared by several controls is a RadioNodeList; a
                  // <select> has a length too (its options) and is restored.
                  if (!element || (typeof RadioNodeList !== "undefined" && element instanceof RadioNodeList)) { return; }
                  if (element.type === "checkbox") { element.checked = pair[1] === "true"; } else { element.value = pair[1]; }
                });
                store.removeItem("sidecar-draft");
                var notice = document.createElement("p");
                notice.className = "notice";
                notice.setAttribute("role", "status");
                notice.setAttribute("data-restored", "true");
                notice.textContent = "Restored: what you typed before your session ended is filled in again. Check it, then save.";
                form.insertBefore(notice, form.firstChild);
              }
            }
          } catch (e) {}
          // After a refused submission: the first field in error has the focus, in view.
          var invalid = document.querySelector("[aria-invalid='true']");
          if (invalid) { invalid.focus(); invalid.scrollIntoView({ block: "center" }); }
          document.querySelectorAll("button[data-once]").forEach(function (button) {
            var form = button.form;
            if (form) { form.addEventListener("submit", function () { setTimeout(function () { button.disabled = true; }, 0); }); }
          });
          var lost = document.querySelector("[data-lost]");
          function group(number) { return String(number).replace(/\\B(?=(\\d{3})+(?!\\d))/g, ","); }
          document.querySelectorAll("[data-sends-url]").forEach(function (table) {
            var url = table.getAttribute("data-sends-url");
            var wasRunning = {};
            function cell(row, name) { return row.querySelector("[data-field='" + name + "']"); }
            function refresh() {
              fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
                .then(function (response) { if (!response.ok) { throw new Error(String(response.status)); } return response.json(); })
                .then(function (sends) {
                  if (lost) { lost.hidden = true; }
                  var running = false;
                  sends.forEach(function (send) {
                    var row = table.querySelector("[data-send-id='" + send.id + "']");
                    if (!row) { return; }
                    ["status", "pruned"].forEach(function (name) {
                      var target = cell(row, name);
                      if (target) { target.textContent = String(send[name]); }
                    });
                    var total = Math.max(send.audience_size, send.targeted, 1);
                    var bar = cell(row, "bar");
                    if (bar) { bar.style.width = Math.min(100, Math.floor((send.delivered + send.failed) * 100 / total)) + "%"; }
                    var summary = cell(row, "summary");
                    if (summary) {
                      summary.textContent = group(send.delivered) + " of " + group(send.audience_size) + " delivered, " + group(send.failed)
                        + " failed, " + group(send.pending) + " pending";
                    }
                    if (send.status === "running" || send.status === "stalled") { running = true; }
                    // A stalled send says why while the page watches, as it does after a reload.
                    var stalledRow = table.querySelector("[data-stalled-for='" + send.id + "']");
                    if (send.status === "stalled" && !stalledRow) {
                      stalledRow = document.createElement("tr");
                      stalledRow.className = "failure";
                      stalledRow.setAttribute("data-stalled-for", String(send.id));
                      var stalledCell = document.createElement("td");
                      stalledCell.colSpan = 6;
                      var stalledLead = document.createElement("strong");
                      stalledLead.textContent = "No progress: ";
                      stalledCell.appendChild(stalledLead);
                      stalledCell.appendChild(document.createTextNode(
                        (send.last_error || "the push transport has not answered") + ". It goes on by itself when the transport answers."));
                      stalledRow.appendChild(stalledCell);
                      row.parentNode.insertBefore(stalledRow, row.nextSibling);
                    } else if (send.status !== "stalled" && stalledRow) {
                      stalledRow.parentNode.removeChild(stalledRow);
                    }
                    if (send.status === "failed" && send.reason && !table.querySelector("[data-failure-for='" + send.id + "']")) {
                      // The reason and the Resume link, as the server draws them after a reload.
                      var failure = document.createElement("tr");
                      failure.className = "failure";
                      failure.setAttribute("data-failure-for", String(send.id));
                      var td = document.createElement("td");
                      td.colSpan = 6;
                      var strong = document.createElement("strong");
                      strong.textContent = "It stopped: " + send.reason + ". ";
                      td.appendChild(strong);
                      if (send.resume_href) {
                        var resume = document.createElement("a");
                        resume.href = send.resume_href;
                        resume.className = "button secondary";
                        resume.textContent = send.resume_label;
                        td.appendChild(resume);
                      }
                      failure.appendChild(td);
                      row.parentNode.insertBefore(failure, row.nextSibling);
                    }
                    if (wasRunning[send.id] && send.status !== "running" && send.status !== "stalled") {
                      var outcome = document.querySelector("[data-send-outcome]");
                      if (outcome) {
                        outcome.hidden = false;
                        outcome.textContent = "Send " + send.id + (send.status === "done" ? " finished: " : " stopped: ") + group(send.delivered)
                          + " of " + group(send.audience_size) + " delivered" + (send.status === "failed" ? " (" + send.reason + ")." : ".");
                      }
                    }
                    wasRunning[send.id] = send.status === "running" || send.status === "stalled";
                  });
                  if (running) { setTimeout(refresh, 1000); return; }
                  // Nothing runs any more: the send buttons work again.
                  document.querySelectorAll("button[data-enable-href]").forEach(function (button) {
                    var link = document.createElement("a");
                    link.href = button.getAttribute("data-enable-href");
                    link.className = "button " + button.className;
                    link.textContent = button.textContent;
                    button.parentNode.replaceChild(link, button);
                  });
                  document.querySelectorAll("[data-running-hint]").forEach(function (hint) { hint.hidden = true; });
                })
                .catch(function () { if (lost) { lost.hidden = false; } setTimeout(refresh, 3000); });
            }
            refresh();
          });
        });
        """
}
