#include "gpufit/report/report_assets.h"

// GPUFIT_ECHARTS_JS, GPUFIT_REPORT_JS, GPUFIT_REPORT_CSS: absolute paths (CMakeLists.txt),
// which the build also lists as this file's dependencies (OBJECT_DEPENDS).
#define GPUFIT_INCBIN(name, path)                                                             \
  __asm__(".pushsection .rodata\n.balign 16\n.hidden " #name "_begin\n.hidden " #name "_end\n" \
          ".global " #name "_begin\n.global " #name "_end\n" #name "_begin:\n.incbin \"" path  \
          "\"\n" #name "_end:\n.byte 0\n.popsection\n")

GPUFIT_INCBIN(gpufit_report_echarts, GPUFIT_ECHARTS_JS);
GPUFIT_INCBIN(gpufit_report_js, GPUFIT_REPORT_JS);
GPUFIT_INCBIN(gpufit_report_css, GPUFIT_REPORT_CSS);

extern "C" {
extern const char gpufit_report_echarts_begin[], gpufit_report_echarts_end[];
extern const char gpufit_report_js_begin[], gpufit_report_js_end[];
extern const char gpufit_report_css_begin[], gpufit_report_css_end[];
}

namespace gpufit::report {
namespace {
std::string_view Between(const char* begin, const char* end) {
  return {begin, static_cast<std::string_view::size_type>(end - begin)};
}
}  // namespace

std::string_view EchartsJs() { return Between(gpufit_report_echarts_begin, gpufit_report_echarts_end); }
std::string_view ReportJs() { return Between(gpufit_report_js_begin, gpufit_report_js_end); }
std::string_view ReportCss() { return Between(gpufit_report_css_begin, gpufit_report_css_end); }

}  // namespace gpufit::report
