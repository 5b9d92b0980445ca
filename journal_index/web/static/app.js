// journal-index web view: a few lines on top of server-rendered pages (everything works without them).
"use strict";

// Search as you type: after a pause, fetch the same page's results and swap them in; the URL keeps the query.
function searchAsYouType(form, results) {
  let timer = null;
  let asked = 0;
  const run = async () => {
    const query = new URLSearchParams(new FormData(form));
    for (const [key, value] of [...query.entries()]) if (!value) query.delete(key);
    const url = "/search?" + query.toString();
    const mine = ++asked;
    const answer = await fetch(url + (query.toString() ? "&" : "") + "partial=1", {credentials: "same-origin"});
    if (mine !== asked) return; // a newer search started meanwhile
    results.innerHTML = await answer.text();
    history.replaceState(null, "", url);
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(run, 250); };
  form.addEventListener("input", later);
  form.addEventListener("change", later);
}

// A link to /session/...#entry on a long session may land on a page without that entry: ask for it in its place.
function findEntry(conversation) {
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (!wanted || document.getElementById(wanted)) return;
  const params = new URLSearchParams(location.search);
  if (params.get("at") === wanted) return;
  location.replace(conversation.dataset.sessionUrl + "?at=" + encodeURIComponent(wanted) + location.hash);
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("search");
  const results = document.getElementById("results");
  if (form && results) searchAsYouType(form, results);
  const conversation = document.getElementById("conversation");
  if (conversation) findEntry(conversation);
});
