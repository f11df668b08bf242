// A self-contained HTML page (inline CSS and SVG, nothing fetched from the network).
#pragma once

#include <string>

namespace crosspoint::analysis {

// body_html is inserted as is; title is escaped.
std::string render_html_page(const std::string& title, const std::string& body_html);

}  // namespace crosspoint::analysis
