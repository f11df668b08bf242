// A table of strings rendered as Markdown (report.md) or HTML (report.html).
#pragma once

#include <string>
#include <vector>

namespace crosspoint::analysis {

struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as long as header (short rows are padded)
  std::vector<bool> right_align;               // per column; numbers read best right-aligned
};

// GitHub-flavoured Markdown; '|' inside cells is escaped, newlines become spaces.
std::string render_markdown_table(const TextTable& table);
// <table> with <thead>/<tbody>, every cell HTML-escaped.
std::string render_html_table(const TextTable& table);
// & < > " ' escaped for HTML and XML text and attributes.
std::string xml_escape(const std::string& text);

}  // namespace crosspoint::analysis
