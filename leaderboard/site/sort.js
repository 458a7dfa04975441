"use strict";
// Sortable tables: a click on a header button sorts the body rows by that column's data-sort values
// (numbers numerically, text alphabetically; empty values always last). A second click reverses.
(function () {
  function sortKey(cell) {
    var raw = cell ? cell.getAttribute("data-sort") : null;
    if (raw === null) raw = cell ? cell.textContent.trim() : "";
    if (raw === "") return { empty: true };
    var number = Number(raw);
    return isNaN(number) ? { text: raw.toLowerCase() } : { number: number };
  }
  function compare(a, b) {
    if (a.empty || b.empty) return a.empty && b.empty ? 0 : (a.empty ? 1 : -1);
    if (a.number !== undefined && b.number !== undefined) return a.number - b.number;
    var x = a.text !== undefined ? a.text : String(a.number), y = b.text !== undefined ? b.text : String(b.number);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  function sortTable(table, column, header) {
    var numeric = header.classList.contains("num");
    var current = header.getAttribute("aria-sort");
    var direction = current ? (current === "descending" ? "ascending" : "descending") : (numeric ? "descending" : "ascending");
    table.querySelectorAll("th").forEach(function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var sign = direction === "ascending" ? 1 : -1;
    rows = rows.map(function (row, index) { return { row: row, index: index, key: sortKey(row.cells[column]) }; });
    rows.sort(function (a, b) {
      var c = compare(a.key, b.key);
      if (a.key.empty || b.key.empty) return c || a.index - b.index;
      return sign * c || a.index - b.index;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (header, column) {
      var button = header.querySelector("button");
      if (button) button.addEventListener("click", function () { sortTable(table, column, header); });
    });
  });
})();
