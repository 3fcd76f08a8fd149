{% raw %}
// The inbox's live updates, countdowns, notices and keyboard shortcuts. Every string that comes from
// an agent or a person is set with textContent, never parsed as HTML.
(function () {
  "use strict";
  var body = document.body;
  var list = document.getElementById("hg-list");
  var count = document.getElementById("hg-count");
  var empty = document.getElementById("hg-empty");
  var live = document.getElementById("hg-live");
  var feedState = document.getElementById("hg-feed-state");
  var toast = document.getElementById("hg-toast");
  var toastText = document.getElementById("hg-toast-text");
  var toastOpen = document.getElementById("hg-toast-open");
  var help = document.getElementById("hg-help");
  var helpToggle = document.getElementById("hg-help-toggle");
  var form = document.getElementById("hg-form");
  var current = body.getAttribute("data-current") || "";
  // Count against the server's clock, not the device's, which may be off by minutes.
  var skew = Number(body.getAttribute("data-now")) - Date.now() / 1000;
  var newest = "";
  var toastTimer = null;

  function words(total) {
    var h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
    if (h) { return h + " h " + m + " min"; }
    if (m) { return m + " min " + s + " s"; }
    return s + " s";
  }
  function leftText(deadline) {
    var left = Math.ceil(deadline - (Date.now() / 1000 + skew));
    return left > 0 ? words(left) + " left" : "expired";
  }
  function tick() {
    var items = list.querySelectorAll("li[data-deadline]");
    for (var i = 0; i < items.length; i++) {
      var span = items[i].querySelector(".countdown");
      if (span) { span.textContent = leftText(Number(items[i].getAttribute("data-deadline"))); }
    }
    var timer = document.getElementById("hg-countdown");
    if (timer) { timer.textContent = leftText(Number(timer.getAttribute("data-deadline"))); }
  }

  function announce(text) {
    live.textContent = "";
    window.setTimeout(function () { live.textContent = text; }, 50);
  }
  function showToast(text, id) {
    toastText.textContent = text;
    toastOpen.setAttribute("href", "/inbox/" + encodeURIComponent(id));
    toast.hidden = false;
    if (toastTimer !== null) { window.clearTimeout(toastTimer); }
    toastTimer = window.setTimeout(function () { toast.hidden = true; }, 20000);
  }

  function links() { return Array.prototype.slice.call(list.querySelectorAll("li > a")); }
  function itemOf(id) { return list.querySelector('li[data-id="' + CSS.escape(id) + '"]'); }
  function refreshCount() {
    var n = list.querySelectorAll("li").length;
    count.textContent = String(n);
    empty.hidden = n > 0;
    document.title = (n ? "(" + n + ") " : "") + "Inbox \u00b7 humangate";
  }
  function span(cls, text) {
    var node = document.createElement("span");
    node.className = cls;
    node.textContent = text;
    return node;
  }
  function upsert(item) {
    var li = itemOf(item.id);
    if (!li) {
      li = document.createElement("li");
      li.setAttribute("data-id", item.id);
    }
    li.setAttribute("data-deadline", String(item.deadline));
    var a = document.createElement("a");
    a.href = "/inbox/" + encodeURIComponent(item.id);
    if (item.id === current) { a.setAttribute("aria-current", "page"); }
    var meta = span("meta", "");
    meta.append(span("who", item.requester), " \u00b7 ", span("where", item.channel), " \u00b7 ");
    if (item.approvals) { meta.append(span("approvals", item.approvals), " \u00b7 "); }
    meta.append(span("countdown", leftText(item.deadline)));
    a.append(span("preview", item.preview), " ", meta);
    var focused = li.contains(document.activeElement);
    li.replaceChildren(a);
    // Soonest deadline first, as the server lists them.
    var after = null, others = list.querySelectorAll("li");
    for (var i = 0; i < others.length; i++) {
      if (others[i] !== li && Number(others[i].getAttribute("data-deadline")) > item.deadline) { after = others[i]; break; }
    }
    list.insertBefore(li, after);
    if (focused) { a.focus(); }
    refreshCount();
    return li;
  }
  function remove(id) {
    var li = itemOf(id);
    if (!li) { return; }
    var focused = li.contains(document.activeElement);
    var next = li.nextElementSibling || li.previousElementSibling;
    li.remove();
    if (focused && next) { next.querySelector("a").focus(); }
    refreshCount();
  }
  function endCurrent(text) {
    var banner = document.getElementById("hg-ended");
    if (!banner || !form) { return; }
    banner.textContent = "This request has ended: " + text + ". Nothing you typed here was sent.";
    banner.hidden = false;
    var controls = form.querySelectorAll("input, select, textarea, button");
    for (var i = 0; i < controls.length; i++) { controls[i].disabled = true; }
    var timer = document.getElementById("hg-countdown");
    if (timer) { timer.removeAttribute("data-deadline"); timer.id = ""; timer.textContent = "ended"; }
  }

  var handlers = {
    snapshot: function (data) {
      skew = data.now - Date.now() / 1000;
      var seen = {};
      data.requests.forEach(function (item) { seen[item.id] = true; upsert(item); });
      list.querySelectorAll("li").forEach(function (li) {
        if (!seen[li.getAttribute("data-id")]) { li.remove(); }
      });
      refreshCount();
    },
    added: function (item) {
      var fresh = !itemOf(item.id);
      var li = upsert(item);
      if (!fresh) { return; }
      newest = item.id;
      li.classList.add("fresh");
      var text = "New request from " + item.requester + " on " + item.channel + ": " + item.preview;
      announce(text);
      showToast(text, item.id);
    },
    ended: function (data) {
      remove(data.id);
      if (data.id === current) {
        endCurrent(data.text);
        announce("The open request has ended: " + data.text);
      }
    },
    extended: function (data) {
      var li = itemOf(data.id);
      if (li) { li.setAttribute("data-deadline", String(data.deadline)); }
      var timer = document.getElementById("hg-countdown");
      if (timer && data.id === current) { timer.setAttribute("data-deadline", String(data.deadline)); }
      tick();
    },
    reminded: function (data) {
      if (!itemOf(data.id)) { return; }
      announce(data.text);
      showToast(data.text, data.id);
    },
    "signed-out": function () {
      feedState.textContent = "Signed out: reload the page to sign in again.";
      source.close();
    }
  };

  var source = new EventSource("/inbox/events");
  Object.keys(handlers).forEach(function (name) {
    source.addEventListener(name, function (event) { handlers[name](JSON.parse(event.data)); });
  });
  source.addEventListener("open", function () { feedState.textContent = "Live: new requests appear as they arrive."; });
  source.addEventListener("error", function () {
    feedState.textContent = source.readyState === EventSource.CLOSED
      ? "Live updates stopped: reload the page." : "Reconnecting to live updates\u2026";
  });
  feedState.textContent = "Connecting to live updates\u2026";

  function typing(target) {
    return target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement ||
      target instanceof HTMLSelectElement || (target instanceof HTMLElement && target.isContentEditable);
  }
  function move(step) {
    var all = links();
    if (!all.length) { return; }
    var at = all.indexOf(document.activeElement);
    if (at < 0) { at = all.findIndex(function (a) { return a.hasAttribute("aria-current"); }); }
    var next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    all[next].focus();
  }
  function openNewest() {
    var target = newest && itemOf(newest) ? newest : "";
    if (!target) {
      var all = links();
      if (!all.length) { return; }
      target = all[all.length - 1].parentElement.getAttribute("data-id");
    }
    window.location.assign("/inbox/" + encodeURIComponent(target));
  }
  function toggleHelp(show) {
    help.hidden = !show;
    helpToggle.setAttribute("aria-expanded", String(show));
    if (show) { help.setAttribute("tabindex", "-1"); help.focus(); } else { helpToggle.focus(); }
  }
  helpToggle.addEventListener("click", function () { toggleHelp(help.hidden); });
  document.getElementById("hg-toast-close").addEventListener("click", function () { toast.hidden = true; });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && form && form.contains(target)) {
      event.preventDefault();
      var submit = document.getElementById("hg-submit");
      if (submit && !submit.disabled) { form.requestSubmit(submit); }
      return;
    }
    if (event.key === "Escape") {
      if (!help.hidden) { toggleHelp(false); return; }
      if (typing(target)) {
        target.blur();
        var mine = current && itemOf(current);
        (mine ? mine.querySelector("a") : document.getElementById("hg-detail")).focus();
        return;
      }
      if (current) { window.location.assign("/inbox"); }
      return;
    }
    if (typing(target) || event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "j" || event.key === "ArrowDown") { event.preventDefault(); move(1); }
    else if (event.key === "k" || event.key === "ArrowUp") { event.preventDefault(); move(-1); }
    else if (event.key === "o" && list.contains(target)) { target.click(); }
    else if (event.key === "n") { openNewest(); }
    else if (event.key === "?") { toggleHelp(help.hidden); }
  });

  tick();
  window.setInterval(tick, 1000);
  var errors = document.getElementById("hg-errors");
  var first = form && form.querySelector("input:not([type=hidden]), select, textarea");
  if (errors) { errors.focus(); }
  else if (first && !first.disabled) { first.focus(); }
  else if (links().length) { links()[0].focus(); }
})();
{% endraw %}
