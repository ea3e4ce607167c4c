// LAPACK for the host backend's dense factorizations (DeviceOps::Factorize), loaded with dlopen
// on first use instead of linked, for the reason OpenBLAS's GEMM is (openblas_api.h): a BLAS
// mapped at process start-up breaks the metrics exporter. OpenBLAS carries LAPACK, so the same
// library serves; the reference liblapack.so.3 is the fallback. The symbols are Fortran's:
// every argument by pointer, column-major matrices, and the hidden length of each character
// argument appended (gfortran's convention, size_t).
#ifndef DISTARRAY_SERVER_HOST_LAPACK_API_H_
#define DISTARRAY_SERVER_HOST_LAPACK_API_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace distarray {

using LapackInt = int;  // Debian's OpenBLAS and reference LAPACK: 32-bit integers (LP64)

// One precision's routines. `T` is the element (float, double, or the complex types laid out as
// two reals), `R` its real part. Real precisions have orgqr/syevd, complex ones ungqr/heevd (bound
// to the same members); rwork arguments exist only in the complex routines.
template <typename T, typename R>
struct LapackRoutines {
  void (*getrf)(const LapackInt* m, const LapackInt* n, T* a, const LapackInt* lda, LapackInt* ipiv,
                LapackInt* info);
  void (*getrs)(const char* trans, const LapackInt* n, const LapackInt* nrhs, const T* a,
                const LapackInt* lda, const LapackInt* ipiv, T* b, const LapackInt* ldb,
                LapackInt* info, size_t trans_len);
  void (*potrf)(const char* uplo, const LapackInt* n, T* a, const LapackInt* lda, LapackInt* info,
                size_t uplo_len);
  void (*geqrf)(const LapackInt* m, const LapackInt* n, T* a, const LapackInt* lda, T* tau, T* work,
                const LapackInt* lwork, LapackInt* info);
  void (*orgqr)(const LapackInt* m, const LapackInt* n, const LapackInt* k, T* a,
                const LapackInt* lda, const T* tau, T* work, const LapackInt* lwork,
                LapackInt* info);
  // Real: syevd(jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info).
  void (*syevd)(const char* jobz, const char* uplo, const LapackInt* n, T* a, const LapackInt* lda,
                R* w, T* work, const LapackInt* lwork, LapackInt* iwork, const LapackInt* liwork,
                LapackInt* info, size_t jobz_len, size_t uplo_len);
  // Complex: heevd(jobz, uplo, n, a, lda, w, work, lwork, rwork, lrwork, iwork, liwork, info).
  void (*heevd)(const char* jobz, const char* uplo, const LapackInt* n, T* a, const LapackInt* lda,
                R* w, T* work, const LapackInt* lwork, R* rwork, const LapackInt* lrwork,
                LapackInt* iwork, const LapackInt* liwork, LapackInt* info, size_t jobz_len,
                size_t uplo_len);
  // Real: gesdd(jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork, info).
  void (*gesdd)(const char* jobz, const LapackInt* m, const LapackInt* n, T* a,
                const LapackInt* lda, R* s, T* u, const LapackInt* ldu, T* vt,
                const LapackInt* ldvt, T* work, const LapackInt* lwork, LapackInt* iwork,
                LapackInt* info, size_t jobz_len);
  // Complex: gesdd(jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, iwork, info).
  void (*zgesdd)(const char* jobz, const LapackInt* m, const LapackInt* n, T* a,
                 const LapackInt* lda, R* s, T* u, const LapackInt* ldu, T* vt,
                 const LapackInt* ldvt, T* work, const LapackInt* lwork, R* rwork, LapackInt* iwork,
                 LapackInt* info, size_t jobz_len);
};

struct LapackComplex64 {
  float re, im;
};
struct LapackComplex128 {
  double re, im;
};

struct LapackApi {
  LapackRoutines<float, float> s;
  LapackRoutines<double, double> d;
  LapackRoutines<LapackComplex64, float> c;
  LapackRoutines<LapackComplex128, double> z;
};

// The loaded API (once per process); UNAVAILABLE naming the libraries when none loads or one
// lacks a routine.
absl::StatusOr<const LapackApi*> LoadLapack();

}  // namespace distarray

#endif  // DISTARRAY_SERVER_HOST_LAPACK_API_H_
