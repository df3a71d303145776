// The console's pages: each reads one JSON endpoint (SQL over the introspection relations)
// and renders it; the current page refreshes every REFRESH_MS.
"use strict";

const REFRESH_MS = 3000;
const PAGES = {
  clusters: renderClusters,
  queries: renderQueries,
  "materialized-views": () => renderTable("/api/materialized-views", "mv-table"),
  sessions: () => renderTable("/api/sessions", "sessions-table"),
  sql: () => {},
};

async function api(path, body) {
  const opts = body === undefined ? {} :
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const resp = await fetch(path, opts);
  const data = await resp.json();
  if (!resp.ok) throw new Error(`${data.error.sqlstate}: ${data.error.message}`);
  return data;
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === null ? "" : text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

// Columns kept in the data (the cancel button needs session_id) but not shown.
const HIDDEN = new Set(["execution_id", "session_id", "finished_at", "application_name"]);

// A table of ``data`` ({columns, rows}); ``decorate(tr, row)`` may add cells.
function table(data, extraHeader, decorate) {
  const t = document.createElement("table");
  const head = t.createTHead().insertRow();
  for (const c of data.columns.filter((c) => !HIDDEN.has(c)).concat(extraHeader || [])) {
    const th = document.createElement("th");
    th.textContent = c;
    head.appendChild(th);
  }
  const body = t.createTBody();
  for (const row of data.rows) {
    const tr = body.insertRow();
    row.forEach((v, i) => {
      const name = data.columns[i];
      if (HIDDEN.has(name)) return;
      const td = cell(tr, v, name === "sql" ? "sql" : name === "status" && v ? `status-${v}` : null);
      if (name === "spark_ui" && v) {
        td.textContent = "";
        const a = document.createElement("a");
        a.href = v; a.textContent = "Spark UI"; a.target = "_blank";
        td.appendChild(a);
      }
    });
    if (decorate) decorate(tr, row);
  }
  return t;
}

async function renderTable(path, id) {
  const data = await api(path);
  document.getElementById(id).replaceChildren(table(data));
}

async function renderClusters() {
  const data = await api("/api/clusters");
  document.getElementById("clusters-table").replaceChildren(table(data));
  const hist = await api("/api/utilization");
  const col = (name) => hist.columns.indexOf(name);
  const series = {};
  for (const r of hist.rows) {
    const s = series[r[col("replica")]] ||= { x: [], cpu: [], mem: [] };
    s.x.push(r[col("occurred_at")]);
    s.cpu.push(r[col("cpu_percent")] === null ? null : parseFloat(r[col("cpu_percent")]));
    s.mem.push(r[col("memory_percent")] === null ? null : parseFloat(r[col("memory_percent")]));
  }
  const traces = (key) => Object.entries(series).map(([name, s]) => ({ name, x: s.x, y: s[key], mode: "lines" }));
  const layout = (title) => ({ title: { text: title }, margin: { t: 40, r: 20, b: 40, l: 50 },
                               yaxis: { title: { text: "%" }, rangemode: "tozero" } });
  if (window.Plotly) {
    Plotly.react("cpu-plot", traces("cpu"), layout("CPU, % of the replica's cores"));
    Plotly.react("memory-plot", traces("mem"), layout("Memory, % of the replica's limit"));
  }
}

function duration(row, cols) {
  const began = Date.parse(row[cols.indexOf("began_at")].replace(" ", "T").replace(/\+00$/, "Z"));
  const fin = row[cols.indexOf("finished_at")];
  const end = fin ? Date.parse(fin.replace(" ", "T").replace(/\+00$/, "Z")) : Date.now();
  return ((end - began) / 1000).toFixed(3) + " s";
}

async function renderQueries() {
  const data = await api("/api/queries");
  const cols = data.columns;
  const fin = cols.indexOf("finished_at");
  const running = { columns: cols, rows: data.rows.filter((r) => r[fin] === null) };
  const recent = { columns: cols, rows: data.rows.filter((r) => r[fin] !== null) };
  document.getElementById("running-table").replaceChildren(table(running, ["duration", ""], (tr, row) => {
    cell(tr, duration(row, cols));
    const b = document.createElement("button");
    b.textContent = "Cancel";
    b.className = "cancel";
    b.onclick = async () => { b.disabled = true; await api("/api/cancel", { session_id: row[cols.indexOf("session_id")] }); };
    cell(tr, "").appendChild(b);
  }));
  document.getElementById("recent-table").replaceChildren(table(recent, ["duration"], (tr, row) => cell(tr, duration(row, cols))));
}

async function runSql(explain) {
  const status = document.getElementById("sql-status");
  const out = document.getElementById("sql-result");
  status.textContent = "running…";
  status.className = "";
  try {
    const data = await api("/api/sql", { sql: document.getElementById("sql-text").value, explain });
    status.textContent = data.tag + (data.truncated ? " (first rows only)" : "");
    if (explain && data.rows.length) {
      const pre = document.createElement("pre");
      pre.className = "explain";
      pre.textContent = data.rows.map((r) => r.join("\t")).join("\n");
      out.replaceChildren(pre);
    } else {
      out.replaceChildren(table(data));
    }
  } catch (e) {
    status.textContent = e.message;
    status.className = "error";
    out.replaceChildren();
  }
}

function show() {
  const page = (location.hash || "#clusters").slice(1);
  for (const s of document.querySelectorAll(".page")) s.classList.toggle("active", s.id === `page-${page}`);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === page);
  const render = PAGES[page];
  if (render) render().catch((e) => console.error(e));
}

document.getElementById("sql-run").onclick = () => runSql(false);
document.getElementById("sql-explain").onclick = () => runSql(true);
window.addEventListener("hashchange", show);
show();
setInterval(show, REFRESH_MS);
