// The master's web page: every 2 s, /api/v1/cluster (cluster_json.c) is read
// and the owners' table redrawn: memory and SSD use as bars, hits by source,
// ops/s (from two documents' ops_total and time_ms), p50 / p99 latencies.
// Each row is <tr data-owner=NAME> with cells data-field=...; #status counts
// the refreshes in data-refreshes.
"use strict";

const REFRESH_MS = 2000;
let previous = null; // the last document, for rates
let refreshes = 0;

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

function micros(us) {
  if (!us) return "-";
  return us >= 1000 ? (us / 1000).toFixed(2) + " ms" : us.toFixed(0) + " us";
}

function cell(row, field) {
  let td = row.querySelector('[data-field="' + field + '"]');
  if (!td) {
    td = document.createElement("td");
    td.dataset.field = field;
    row.appendChild(td);
  }
  return td;
}

function bar(td, used, capacity, kind) {
  const pct = capacity ? Math.min(100, (100 * used) / capacity) : 0;
  td.dataset.used = String(used);
  td.dataset.capacity = String(capacity);
  td.replaceChildren();
  const b = document.createElement("span");
  b.className = "bar " + kind;
  const fill = document.createElement("span");
  fill.className = "fill";
  fill.style.width = pct.toFixed(1) + "%";
  b.appendChild(fill);
  const text = document.createElement("span");
  text.className = "bar-text";
  text.textContent = capacity ? bytes(used) + " / " + bytes(capacity) : "none";
  td.append(b, text);
}

function rate(owner, doc) {
  if (!previous) return null;
  const before = previous.owners.find((o) => o.name === owner.name);
  const dt = (doc.time_ms - previous.time_ms) / 1000;
  if (!before || dt <= 0) return null;
  return Math.max(0, owner.ops_total - before.ops_total) / dt;
}

function drawOwner(tbody, owner, doc) {
  let row = tbody.querySelector('tr[data-owner="' + CSS.escape(owner.name) + '"]');
  if (!row) {
    row = document.createElement("tr");
    row.dataset.owner = owner.name;
    tbody.appendChild(row);
  }
  cell(row, "name").textContent = owner.name;
  const state = cell(row, "state");
  state.textContent = owner.state;
  state.className = "state-" + owner.state;
  bar(cell(row, "memory"), owner.memory_used, owner.memory_capacity, "memory");
  bar(cell(row, "ssd"), owner.ssd_used, owner.ssd_capacity, "ssd");
  const hits = cell(row, "hits");
  hits.className = "hits";
  const total = owner.hits_memory + owner.hits_ssd + owner.misses;
  const pct = (n) => (total ? ((100 * n) / total).toFixed(1) + "%" : "-");
  hits.dataset.memory = String(owner.hits_memory);
  hits.dataset.ssd = String(owner.hits_ssd);
  hits.dataset.misses = String(owner.misses);
  hits.replaceChildren(...[owner.hits_memory, owner.hits_ssd, owner.misses].map((n) => {
    const s = document.createElement("span");
    s.textContent = n + " (" + pct(n) + ")";
    return s;
  }));
  const r = rate(owner, doc);
  const ops = cell(row, "ops");
  ops.className = "num";
  ops.dataset.opsTotal = String(owner.ops_total);
  ops.textContent = r === null ? "-" : r.toFixed(1);
  const get = owner.latency_us.get;
  const put = owner.latency_us.put;
  const getCell = cell(row, "get_latency");
  getCell.className = "num";
  getCell.dataset.count = String(get.count);
  getCell.textContent = micros(get.p50) + " / " + micros(get.p99);
  const putCell = cell(row, "put_latency");
  putCell.className = "num";
  putCell.dataset.count = String(put.count);
  putCell.textContent = micros(put.p50) + " / " + micros(put.p99);
}

function draw(doc) {
  document.getElementById("routes").textContent = String(doc.routes);
  document.getElementById("inflight-puts").textContent = String(doc.inflight_puts);
  document.getElementById("inflight-gets").textContent = String(doc.inflight_gets);
  document.getElementById("leading").textContent = doc.leading ? "serving" : "standby";
  const tbody = document.getElementById("owner-rows");
  const names = new Set(doc.owners.map((o) => o.name));
  for (const row of [...tbody.querySelectorAll("tr[data-owner]")]) {
    if (!names.has(row.dataset.owner)) row.remove();
  }
  for (const owner of doc.owners) drawOwner(tbody, owner, doc);
  document.getElementById("empty").hidden = doc.owners.length > 0;
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const resp = await fetch("/api/v1/cluster", { cache: "no-store" });
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    const doc = await resp.json();
    draw(doc);
    previous = doc;
    refreshes++;
    status.dataset.refreshes = String(refreshes);
    status.textContent = "updated " + new Date().toLocaleTimeString();
  } catch (err) {
    status.textContent = "cannot reach the master: " + err.message;
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

refresh();
