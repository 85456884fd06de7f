// The console's only script: filters apply as soon as a choice changes, and the status page refreshes
// its body in place.
document.addEventListener("DOMContentLoaded", () => {
  const filters = document.getElementById("filters");
  if (filters) {
    filters.querySelectorAll("select").forEach((el) => el.addEventListener("change", () => filters.submit()));
  }
  const status = document.getElementById("status");
  if (status) {
    const every = 1000 * Number(status.dataset.refreshS || 5);
    setInterval(async () => {
      const resp = await fetch("/status?fragment=1", { credentials: "same-origin" });
      if (resp.ok) status.innerHTML = await resp.text();
    }, every);
  }
});
