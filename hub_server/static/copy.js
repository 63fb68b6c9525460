// Copy buttons for commands and tokens (progressive enhancement: without JavaScript the text is still
// selected whole by one click, `user-select: all` in hub.css). The page's CSP allows scripts from the hub
// itself only ('self'); nothing here is inline.
(function () {
  "use strict";
  function copy(text, done) {
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(text, done); });
    } else {
      fallback(text, done);
    }
  }
  function fallback(text, done) {
    // Plain-http hubs (not localhost) have no Clipboard API: copy a selection instead.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "copy-scratch";
    document.body.appendChild(area);
    area.select();
    try { if (document.execCommand("copy")) { done(); } } catch (e) { /* selection stays for Ctrl-C */ }
    document.body.removeChild(area);
  }
  function enhance() {
    var items = document.querySelectorAll("[data-copy]");
    for (var i = 0; i < items.length; i++) {
      (function (item) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "copy-button";
        button.textContent = "Copy";
        button.setAttribute("aria-label", "Copy to the clipboard");
        button.addEventListener("click", function () {
          copy(item.textContent, function () {
            button.textContent = "Copied";
            setTimeout(function () { button.textContent = "Copy"; }, 1500);
          });
        });
        item.parentNode.insertBefore(button, item.nextSibling);
      })(items[i]);
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", enhance);
  } else {
    enhance();
  }
})();
