#include "analysis/markdown_table.h"

namespace crosspoint::analysis {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

bool is_right(const TextTable& table, size_t column) {
  return column < table.right_align.size() && table.right_align[column];
}

}  // namespace

std::string render_markdown_table(const TextTable& table) {
  std::string out = "|";
  for (const std::string& h : table.header) out += " " + markdown_cell(h) + " |";
  out += "\n|";
  for (size_t i = 0; i < table.header.size(); ++i) out += is_right(table, i) ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (size_t i = 0; i < table.header.size(); ++i) out += " " + (i < row.size() ? markdown_cell(row[i]) : "") + " |";
    out += "\n";
  }
  return out;
}

std::string render_html_table(const TextTable& table) {
  std::string out = "<table>\n<thead><tr>";
  for (size_t i = 0; i < table.header.size(); ++i)
    out += std::string(is_right(table, i) ? "<th class=\"num\">" : "<th>") + xml_escape(table.header[i]) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (size_t i = 0; i < table.header.size(); ++i) {
      out += std::string(is_right(table, i) ? "<td class=\"num\">" : "<td>") +
             (i < row.size() ? xml_escape(row[i]) : "") + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
  return out;
}

}  // namespace crosspoint::analysis
