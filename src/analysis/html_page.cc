#include "analysis/html_page.h"

#include "analysis/markdown_table.h"

namespace crosspoint::analysis {

namespace {

constexpr const char* kStyle = R"(
body { font-family: Helvetica, Arial, sans-serif; max-width: 1100px; margin: 12px auto; padding: 0 16px;
       color: #222; line-height: 1.45; }
h1 { font-size: 26px; margin-bottom: 4px; }
h2 { font-size: 20px; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p.meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 12px 0; font-size: 14px; }
th, td { border: 1px solid #ddd; padding: 4px 10px; }
th { background: #f4f4f4; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.figures { display: flex; flex-wrap: wrap; gap: 12px; }
.figures svg { border: 1px solid #eee; }
ul.findings li { margin: 4px 0; }
code { background: #f4f4f4; padding: 1px 4px; }
#first-screen h1 { margin-top: 0; }
#first-screen p.meta { font-size: 14px; margin-bottom: 8px; }
dl.verdict { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 8px 0 12px;
             font-size: 15px; }
dl.verdict dt { font-weight: bold; }
dl.verdict dd { margin: 0; }
)";

}  // namespace

std::string render_html_page(const std::string& title, const std::string& body_html) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + xml_escape(title) +
         "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n" + body_html + "</body>\n</html>\n";
}

}  // namespace crosspoint::analysis
