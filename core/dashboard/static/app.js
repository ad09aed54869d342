// Copy buttons: <button data-copy="input-id"> copies that input's value.
document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]");
  if (!b) return;
  var input = document.getElementById(b.getAttribute("data-copy"));
  if (!input) return;
  input.select();
  var done = function () { b.textContent = "Copied"; setTimeout(function () { b.textContent = "Copy"; }, 2000); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});

// Buttons with data-confirm ask before their form is sent.
document.addEventListener("submit", function (e) {
  var b = e.submitter;
  if (b && b.hasAttribute("data-confirm") && !window.confirm(b.getAttribute("data-confirm"))) {
    e.preventDefault();
  }
});
