// collcheck-conformance's spec: none written in; the program takes it from `--backend SPEC` (main.cc).
namespace collcheck::conformance {
extern const char* const kSpec;
const char* const kSpec = "";
}  // namespace collcheck::conformance
