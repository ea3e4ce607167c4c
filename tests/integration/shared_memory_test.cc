// Transfers through shared memory (CreateSharedMemory, UploadFromSharedMemory,
// DownloadToSharedMemory, ReleaseSharedMemory) against the real daemon: round trips of every dtype
// through several layouts compared with the streaming path, every malformed range and every name
// the daemon did not make for the caller (another tenant's or session's segment, a file of the
// daemon's user), the per-tenant bounds, segments ending with their session, the daemon with the
// feature off (or with tenants and no explicit flag), and the SDK's automatic choice between
// shared memory and streaming.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/shared_memory.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/raw_stub.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

// CreateSharedMemory as `client`'s session; the name, or the status.
absl::StatusOr<std::string> CreateSegment(const RawStub& client, int64_t bytes) {
  grpc::ClientContext context;
  client.AttachSession(context);
  v1::CreateSharedMemoryRequest request;
  request.set_bytes(bytes);
  v1::CreateSharedMemoryResponse response;
  const grpc::Status status = client.stub().CreateSharedMemory(&context, request, &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  EXPECT_EQ(response.bytes(), bytes);
  return response.name();
}

grpc::Status ReleaseSegment(const RawStub& client, const std::string& name) {
  grpc::ClientContext context;
  client.AttachSession(context);
  v1::ReleaseSharedMemoryRequest request;
  request.set_name(name);
  v1::ReleaseSharedMemoryResponse response;
  return client.stub().ReleaseSharedMemory(&context, request, &response);
}

bool InDevShm(const std::string& name) {
  struct stat st;
  return lstat(("/dev/shm" + name).c_str(), &st) == 0;
}

// A segment the daemon makes for `client`'s session, opened here by its name as a client does;
// the test reads and writes its bytes through the descriptor. Released when destroyed.
class TestSegment {
 public:
  TestSegment(const RawStub& client, int64_t bytes) : client_(client) {
    absl::StatusOr<std::string> name = CreateSegment(client, bytes);
    EXPECT_TRUE(name.ok()) << name.status();
    if (!name.ok()) return;
    name_ = *name;
    fd_ = shm_open(name_.c_str(), O_RDWR, 0);
    EXPECT_GE(fd_, 0) << std::strerror(errno);
  }
  ~TestSegment() {
    if (fd_ >= 0) close(fd_);
    if (!name_.empty()) ReleaseSegment(client_, name_);
  }
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }
  void Write(const void* data, int64_t bytes, int64_t offset = 0) const {
    ASSERT_EQ(pwrite(fd_, data, bytes, offset), bytes);
  }
  std::string Read(int64_t bytes, int64_t offset = 0) const {
    std::string out(bytes, '\0');
    EXPECT_EQ(pread(fd_, out.data(), bytes, offset), bytes);
    return out;
  }
  v1::SharedMemoryRange Range(int64_t segment_bytes, int64_t offset, int64_t bytes) const {
    v1::SharedMemoryRange range;
    range.set_name(name_);
    range.set_segment_bytes(segment_bytes);
    range.set_offset(offset);
    range.set_bytes(bytes);
    return range;
  }

 private:
  const RawStub client_;
  std::string name_;
  int fd_ = -1;
};

// A file of the daemon's user in /dev/shm that the daemon did not make (another program's
// segment or POSIX semaphore), with known bytes. Removed when destroyed.
class ForeignFile {
 public:
  ForeignFile(const std::string& stem, const std::string& bytes) {
    static int counter = 0;
    name_ = absl::StrCat("/", stem, "distarray-test-", getpid(), "-", counter++);
    const int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    EXPECT_EQ(pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    close(fd);
  }
  ~ForeignFile() { shm_unlink(name_.c_str()); }
  const std::string& name() const { return name_; }
  std::string Read() const {
    const int fd = shm_open(name_.c_str(), O_RDONLY, 0);
    std::string out(1 << 16, '\0');
    const ssize_t n = pread(fd, out.data(), out.size(), 0);
    close(fd);
    out.resize(n < 0 ? 0 : n);
    return out;
  }

 private:
  std::string name_;
};

// The one message a name that is not the caller's segment gets (its field aside).
constexpr char kNotFoundMessage[] =
    "no shared-memory segment of this session has this name (CreateSharedMemory makes one; it "
    "ends with ReleaseSharedMemory or with its session)";

ConnectOptions WithSharedMemory(SharedMemoryUse use) {
  ConnectOptions options;
  options.shared_memory = use;
  return options;
}

class SharedMemoryTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto always = Client::Connect(address(), 5000, WithSharedMemory(SharedMemoryUse::kAlways));
    ASSERT_TRUE(always.ok()) << always.status();
    always_.emplace(*std::move(always));
    auto never = Client::Connect(address(), 5000, WithSharedMemory(SharedMemoryUse::kNever));
    ASSERT_TRUE(never.ok()) << never.status();
    never_.emplace(*std::move(never));
    raw_.emplace(address(), client());
    always_raw_.emplace(address(), *always_);
  }

  grpc::Status Upload(const v1::UploadFromSharedMemoryRequest& request,
                      v1::UploadFromSharedMemoryResponse* response = nullptr) const {
    grpc::ClientContext context;
    raw().AttachSession(context);
    v1::UploadFromSharedMemoryResponse ignored;
    return raw().stub().UploadFromSharedMemory(&context, request, response ? response : &ignored);
  }
  grpc::Status Download(const v1::DownloadToSharedMemoryRequest& request,
                        v1::DownloadToSharedMemoryResponse* response = nullptr) const {
    grpc::ClientContext context;
    raw().AttachSession(context);
    v1::DownloadToSharedMemoryResponse ignored;
    return raw().stub().DownloadToSharedMemory(&context, request, response ? response : &ignored);
  }
  // A header creating a float32 vector of `n` elements on device 0.
  static v1::UploadHeader NewVector(int64_t n, v1::DType dtype = v1::DTYPE_FLOAT32) {
    v1::UploadHeader header;
    v1::ArraySpec* spec = header.mutable_new_array();
    spec->mutable_shape()->add_dims(n);
    spec->set_dtype(dtype);
    *spec->mutable_index_map() = OnDevice(1, 0);
    return header;
  }
  int64_t ArrayCount() const {
    auto list = client().List();
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? static_cast<int64_t>(list->size()) : -1;
  }

  const Client& always() const { return *always_; }
  const Client& never() const { return *never_; }
  // client()'s and always()'s sessions, for raw calls.
  const RawStub& raw() const { return *raw_; }
  const RawStub& always_raw() const { return *always_raw_; }

 private:
  std::optional<Client> always_;
  std::optional<Client> never_;
  std::optional<RawStub> raw_;
  std::optional<RawStub> always_raw_;
};

TEST_P(SharedMemoryTest, ReportsTheHostIdTheSdkComputes) {
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, client().ServerInfo());
  EXPECT_FALSE(LocalHostId().empty());
  EXPECT_EQ(info.host_id(), LocalHostId());
  EXPECT_EQ(info.host_id().size(), 16u);
  EXPECT_NE(std::find(info.features().begin(), info.features().end(), "upload_from_shared_memory"),
            info.features().end());
  EXPECT_TRUE(client().shared_memory_available());
  EXPECT_FALSE(never().shared_memory_available());
}

TEST_P(SharedMemoryTest, EveryDTypeThroughRandomLayoutsMatchesStreaming) {
  std::mt19937_64 rng(4321);
  const std::vector<Shape> shapes = {{37}, {9, 13}, {5, 6, 7}};
  ForEachDType([&](auto tag) {
    using T = decltype(tag);
    for (const Shape& shape : shapes) {
      for (int trial = 0; trial < 2; ++trial) {
        const TestMap map = RandomMap(shape, devices(), rng);
        const std::vector<T> values = RandomValues<T>(NumElements(shape), rng);
        const std::unique_ptr<T[]> data = Contiguous(values);
        const int64_t bytes = NumElements(shape) * static_cast<int64_t>(sizeof(T));
        v1::UploadHeader header;
        v1::ArraySpec* spec = header.mutable_new_array();
        for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
        spec->set_dtype(DTypeOf<T>());
        *spec->mutable_index_map() = ToProto(map, shape);
        ASSERT_OK_AND_ASSIGN(v1::ArrayInfo info,
                             always().UploadThroughSharedMemory(header, data.get(), bytes));
        Array array(client(), info, /*owned=*/true);
        const std::vector<T> want = Expected(values, map, shape, v1::MODE_REPLICA);

        // Streamed back: what went in through shared memory is what a streamed upload stores.
        std::string streamed;
        ASSERT_OK(never().DownloadBytes(info.handle(), {}, &streamed));
        ASSERT_EQ(static_cast<int64_t>(streamed.size()), bytes);
        ASSERT_EQ(std::memcmp(streamed.data(), Contiguous(want).get(), bytes), 0)
            << v1::DType_Name(DTypeOf<T>()) << " rank " << shape.size();

        // Back through shared memory: the same bytes as the stream.
        std::string shared(bytes, '\0');
        ASSERT_OK(always().DownloadThroughSharedMemory(info.handle(), {}, shared.data(), bytes));
        ASSERT_EQ(shared, streamed) << v1::DType_Name(DTypeOf<T>()) << " rank " << shape.size();
      }
    }
  });
}

TEST_P(SharedMemoryTest, OpModeArraysArriveAsTheirLogicalValues) {
  // Copies overlap in a random map, so each element's value is the mode's op over its copies
  // (the daemon combines them into the mapping slab by slab), and uncovered ones the identity.
  std::mt19937_64 rng(99);
  const Shape shape = {12, 7};
  for (v1::Mode mode : {v1::MODE_SUM, v1::MODE_PROD, v1::MODE_MAX, v1::MODE_MIN}) {
    const TestMap map = RandomMap(shape, devices(), rng);
    const std::vector<double> values = RandomValues<double>(NumElements(shape), rng);
    ASSERT_OK_AND_ASSIGN(Array array,
                         never().Upload<double>(values, shape, {ToProto(map, shape), mode}));
    const int64_t bytes = NumElements(shape) * static_cast<int64_t>(sizeof(double));
    std::vector<double> shared(NumElements(shape));
    ASSERT_OK(always().DownloadThroughSharedMemory(array.handle(), {}, shared.data(), bytes));
    EXPECT_EQ(shared, Expected(values, map, shape, mode)) << v1::Mode_Name(mode);
    ASSERT_OK_AND_ASSIGN(std::vector<double> streamed, array.Download<double>());
    EXPECT_EQ(shared, streamed) << v1::Mode_Name(mode);
  }
}

TEST_P(SharedMemoryTest, RegionsWithNegativeStepsMatchStreaming) {
  std::mt19937_64 rng(7);
  const Shape shape = {6, 5, 8};
  const TestMap map = RandomMap(shape, devices(), rng, /*allow_gaps=*/false);
  const std::vector<double> values = RandomValues<double>(NumElements(shape), rng);
  ASSERT_OK_AND_ASSIGN(Array array, never().Upload<double>(values, shape, {ToProto(map, shape)}));
  const v1::Region region =
      MakeRegion({SliceSpec{1, 5, 2}, SliceSpec{std::nullopt, std::nullopt, -1},
                  SliceSpec{3, std::nullopt, std::nullopt}});
  const int64_t region_bytes = 2 * 5 * 5 * sizeof(double);
  std::string streamed;
  ASSERT_OK(never().DownloadBytes(array.handle(), region, &streamed));
  std::string shared(region_bytes, '\0');
  ASSERT_OK(
      always().DownloadThroughSharedMemory(array.handle(), region, shared.data(), region_bytes));
  EXPECT_EQ(shared, streamed);

  // Writing that region through shared memory puts the bytes where a streamed write would.
  std::vector<double> patch(2 * 5 * 5);
  for (size_t i = 0; i < patch.size(); ++i) patch[i] = -1.0 - static_cast<double>(i);
  ASSERT_OK_AND_ASSIGN(Array twin, never().Upload<double>(values, shape, {ToProto(map, shape)}));
  v1::UploadHeader header;
  header.set_handle(array.handle());
  *header.mutable_region() = region;
  ASSERT_OK(always()
                .UploadThroughSharedMemory(header, patch.data(),
                                           static_cast<int64_t>(patch.size() * sizeof(double)))
                .status());
  ASSERT_OK(twin.Write<double>(patch, region));
  ASSERT_OK_AND_ASSIGN(std::vector<double> got, array.Download<double>());
  ASSERT_OK_AND_ASSIGN(std::vector<double> want, twin.Download<double>());
  EXPECT_EQ(got, want);
}

TEST_P(SharedMemoryTest, RangesAtAnOffsetInsideALargerSegment) {
  const int64_t n = 1000, offset = 4096 + 12;  // not page aligned
  TestSegment segment(raw(), offset + n * 4 + 100);
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) * 0.5f;
  segment.Write(values.data(), n * 4, offset);
  v1::UploadFromSharedMemoryRequest request;
  *request.mutable_header() = NewVector(n);
  *request.mutable_source() = segment.Range(offset + n * 4 + 100, offset, n * 4);
  v1::UploadFromSharedMemoryResponse uploaded;
  ASSERT_TRUE(Upload(request, &uploaded).ok());
  Array array(client(), uploaded.array(), /*owned=*/true);
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, never().Open(array.handle())->Download<float>());
  EXPECT_EQ(back, values);

  // Download into the middle of a segment: the bytes around the range stay as they were.
  TestSegment out(raw(), 3 * 4096);
  const std::string before(3 * 4096, '\x5a');
  out.Write(before.data(), before.size());
  v1::DownloadToSharedMemoryRequest download;
  download.set_handle(array.handle());
  *download.mutable_region() = MakeRegion({SliceSpec{10, 20}});
  *download.mutable_destination() = out.Range(3 * 4096, 4092, 40);  // on a float, not a page
  v1::DownloadToSharedMemoryResponse response;
  ASSERT_TRUE(Download(download, &response).ok());
  EXPECT_EQ(response.bytes(), 40);
  EXPECT_EQ(response.dtype(), v1::DTYPE_FLOAT32);
  ASSERT_EQ(response.shape().dims_size(), 1);
  EXPECT_EQ(response.shape().dims(0), 10);
  const std::string after = out.Read(3 * 4096);
  EXPECT_EQ(after.substr(0, 4092), before.substr(0, 4092));
  EXPECT_EQ(std::memcmp(after.data() + 4092, values.data() + 10, 40), 0);
  EXPECT_EQ(after.substr(4092 + 40), before.substr(4092 + 40));
}

// Expects `status` to have `code` and a message naming `field`.
void ExpectRefused(const grpc::Status& status, grpc::StatusCode code, const std::string& field) {
  EXPECT_EQ(status.error_code(), code) << status.error_message();
  EXPECT_NE(status.error_message().find(field), std::string::npos) << status.error_message();
}

TEST_P(SharedMemoryTest, BadUploadsAreRefusedAndLeaveNothing) {
  const int64_t arrays_before = ArrayCount();
  TestSegment segment(raw(), 4096);
  const auto upload = [&](v1::SharedMemoryRange range, v1::UploadHeader header = NewVector(16)) {
    v1::UploadFromSharedMemoryRequest request;
    *request.mutable_header() = std::move(header);
    *request.mutable_source() = std::move(range);
    return Upload(request);
  };
  // A name the daemon did not make.
  v1::SharedMemoryRange missing = segment.Range(4096, 0, 64);
  missing.set_name("/distarray-test-no-such-segment");
  ExpectRefused(upload(missing), grpc::StatusCode::NOT_FOUND,
                absl::StrCat("source.name: ", kNotFoundMessage));
  // Not the segment's size.
  ExpectRefused(upload(segment.Range(1 << 20, 1 << 19, 64)), grpc::StatusCode::INVALID_ARGUMENT,
                "source.segment_bytes");
  // Names outside one /dev/shm component.
  for (const std::string& name :
       {std::string("no-slash"), std::string("/"), std::string("/a/b"), std::string("/.."),
        std::string("/."), std::string("/a b"), std::string("/\xc3\xa9"), std::string(""),
        "/" + std::string(201, 'a'), std::string("//etc/passwd")}) {
    v1::SharedMemoryRange range = segment.Range(4096, 0, 64);
    range.set_name(name);
    ExpectRefused(upload(range), grpc::StatusCode::INVALID_ARGUMENT, "source.name");
  }
  // Offsets and sizes: overflow, negative, past the segment.
  ExpectRefused(upload(segment.Range(4096, INT64_MAX, 64)), grpc::StatusCode::INVALID_ARGUMENT,
                "source.offset");
  ExpectRefused(upload(segment.Range(INT64_MAX, INT64_MAX - 10, 64)),
                grpc::StatusCode::INVALID_ARGUMENT, "source.offset");
  ExpectRefused(upload(segment.Range(4096, -1, 64)), grpc::StatusCode::INVALID_ARGUMENT,
                "source.offset");
  ExpectRefused(upload(segment.Range(4096, 0, -64)), grpc::StatusCode::INVALID_ARGUMENT,
                "source.bytes");
  ExpectRefused(upload(segment.Range(-1, 0, 0)), grpc::StatusCode::INVALID_ARGUMENT,
                "source.segment_bytes");
  ExpectRefused(upload(segment.Range(4096, 4090, 64)), grpc::StatusCode::INVALID_ARGUMENT,
                "source.offset + source.bytes");
  // A range that does not start on an element: the daemon reads elements in place.
  ExpectRefused(upload(segment.Range(4096, 2, 64)), grpc::StatusCode::INVALID_ARGUMENT,
                "source.offset: 2 is not a multiple");
  ExpectRefused(upload(segment.Range(4096, 4, 128), NewVector(16, v1::DTYPE_FLOAT64)),
                grpc::StatusCode::INVALID_ARGUMENT, "source.offset: 4 is not a multiple");
  // Bytes that do not match the array: 16 float64 elements are 128 bytes, not 64.
  ExpectRefused(upload(segment.Range(4096, 0, 64), NewVector(16, v1::DTYPE_FLOAT64)),
                grpc::StatusCode::INVALID_ARGUMENT, "source.bytes");
  // A bool element is 0 or 1, whatever the bytes came through.
  const std::string twos(16, '\x02');
  segment.Write(twos.data(), twos.size());
  ExpectRefused(upload(segment.Range(4096, 0, 16), NewVector(16, v1::DTYPE_BOOL)),
                grpc::StatusCode::INVALID_ARGUMENT, "data");
  // Missing parts of the request.
  ExpectRefused(Upload(v1::UploadFromSharedMemoryRequest()), grpc::StatusCode::INVALID_ARGUMENT,
                "header");
  // Nothing was left behind by any of them.
  EXPECT_EQ(ArrayCount(), arrays_before);
}

// The daemon opens no name a request gives: a file of its user it did not make (another
// program's segment, a POSIX semaphore), a link, a FIFO or a directory is NOT_FOUND with the
// message of a name that does not exist, and its bytes stay as they were.
TEST_P(SharedMemoryTest, NamesTheDaemonDidNotMakeAreNotFoundAndUntouched) {
  std::vector<float> values(16, 1.5f);
  ASSERT_OK_AND_ASSIGN(Array array, never().Upload<float>(values, {16}, {OnDevice(1, 0)}));
  const std::string semaphore_bytes(32, '\x01');  // a semaphore's count of 1, as sem_open makes
  ForeignFile semaphore("sem.", semaphore_bytes);
  const std::string segment_bytes(4096, '\x5a');
  ForeignFile segment("", segment_bytes);
  const std::string link = absl::StrCat("distarray-test-link-", getpid());
  ASSERT_EQ(symlink("/etc/hostname", ("/dev/shm/" + link).c_str()), 0) << std::strerror(errno);
  const std::string fifo = absl::StrCat("distarray-test-fifo-", getpid());
  ASSERT_EQ(mkfifo(("/dev/shm/" + fifo).c_str(), 0600), 0) << std::strerror(errno);
  const std::string dir = absl::StrCat("distarray-test-dir-", getpid());
  ASSERT_EQ(mkdir(("/dev/shm/" + dir).c_str(), 0700), 0) << std::strerror(errno);
  for (const std::string& name :
       {semaphore.name(), segment.name(), "/" + link, "/" + fifo, "/" + dir,
        std::string("/distarray-shm-00000000000000000000000000000000")}) {
    SCOPED_TRACE(name);
    for (int64_t claimed : {int64_t{64}, int64_t{4096}}) {
      v1::DownloadToSharedMemoryRequest download;
      download.set_handle(array.handle());
      download.mutable_destination()->set_name(name);
      download.mutable_destination()->set_segment_bytes(claimed);
      download.mutable_destination()->set_bytes(64);
      const grpc::Status written = Download(download);
      EXPECT_EQ(written.error_code(), grpc::StatusCode::NOT_FOUND) << written.error_message();
      EXPECT_EQ(written.error_message(), absl::StrCat("destination.name: ", kNotFoundMessage));
      v1::UploadFromSharedMemoryRequest upload;
      *upload.mutable_header() = NewVector(16);
      upload.mutable_source()->set_name(name);
      upload.mutable_source()->set_segment_bytes(claimed);
      upload.mutable_source()->set_bytes(64);
      const grpc::Status read = Upload(upload);
      EXPECT_EQ(read.error_code(), grpc::StatusCode::NOT_FOUND) << read.error_message();
      EXPECT_EQ(read.error_message(), absl::StrCat("source.name: ", kNotFoundMessage));
    }
    EXPECT_EQ(ReleaseSegment(raw(), name).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  EXPECT_EQ(semaphore.Read(), semaphore_bytes);
  EXPECT_EQ(segment.Read(), segment_bytes);
  EXPECT_TRUE(InDevShm(semaphore.name()));
  EXPECT_TRUE(InDevShm(segment.name()));
  unlink(("/dev/shm/" + link).c_str());
  unlink(("/dev/shm/" + fifo).c_str());
  rmdir(("/dev/shm/" + dir).c_str());
}

// Another session of the same tenant (another client) does not reach a segment either, and a
// released segment is gone: its name, and the daemon's answer for it.
TEST_P(SharedMemoryTest, ASegmentIsItsSessionsAlone) {
  const std::vector<float> values(16, 2.5f);
  TestSegment segment(raw(), 64);
  segment.Write(values.data(), 64);
  ASSERT_TRUE(InDevShm(segment.name()));
  struct stat st;
  ASSERT_EQ(stat(("/dev/shm" + segment.name()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  v1::UploadFromSharedMemoryRequest request;
  *request.mutable_header() = NewVector(16);
  *request.mutable_source() = segment.Range(64, 0, 64);
  grpc::ClientContext context;
  always_raw().AttachSession(context);  // another session of the same tenant
  v1::UploadFromSharedMemoryResponse response;
  const grpc::Status other =
      always_raw().stub().UploadFromSharedMemory(&context, request, &response);
  EXPECT_EQ(other.error_code(), grpc::StatusCode::NOT_FOUND) << other.error_message();
  EXPECT_EQ(other.error_message(), absl::StrCat("source.name: ", kNotFoundMessage));
  EXPECT_EQ(ReleaseSegment(always_raw(), segment.name()).error_code(), grpc::StatusCode::NOT_FOUND);
  // Its own session reads it.
  v1::UploadFromSharedMemoryResponse uploaded;
  ASSERT_TRUE(Upload(request, &uploaded).ok());
  Array array(client(), uploaded.array(), /*owned=*/true);
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, array.Download<float>());
  EXPECT_EQ(back, values);
  // Released: the name leaves /dev/shm, and the daemon no longer knows it.
  ASSERT_TRUE(ReleaseSegment(raw(), segment.name()).ok());
  EXPECT_FALSE(InDevShm(segment.name()));
  const grpc::Status released = Upload(request);
  EXPECT_EQ(released.error_code(), grpc::StatusCode::NOT_FOUND) << released.error_message();
  EXPECT_EQ(released.error_message(), absl::StrCat("source.name: ", kNotFoundMessage));
}

TEST_P(SharedMemoryTest, BadDownloadsAreRefused) {
  std::vector<float> values(16, 1.5f);
  ASSERT_OK_AND_ASSIGN(Array array, never().Upload<float>(values, {16}, {OnDevice(1, 0)}));
  TestSegment segment(raw(), 4096);
  const auto download = [&](v1::SharedMemoryRange range, const std::string& handle) {
    v1::DownloadToSharedMemoryRequest request;
    request.set_handle(handle);
    *request.mutable_destination() = std::move(range);
    return Download(request);
  };
  ExpectRefused(download(segment.Range(4096, 0, 32), array.handle()),
                grpc::StatusCode::INVALID_ARGUMENT, "destination.bytes");
  ExpectRefused(download(segment.Range(4096, 4064, 64), array.handle()),
                grpc::StatusCode::INVALID_ARGUMENT, "destination.offset + destination.bytes");
  ExpectRefused(download(segment.Range(8192, 0, 64), array.handle()),
                grpc::StatusCode::INVALID_ARGUMENT, "destination.segment_bytes");
  ExpectRefused(download(segment.Range(4096, 4095 - 64, 64), array.handle()),
                grpc::StatusCode::INVALID_ARGUMENT, "destination.offset: 4031 is not a multiple");

  v1::SharedMemoryRange missing = segment.Range(4096, 0, 64);
  missing.set_name("/distarray-test-no-such-segment");
  ExpectRefused(download(missing, array.handle()), grpc::StatusCode::NOT_FOUND, "destination.name");
  ExpectRefused(download(segment.Range(4096, 0, 64), "no-such-array"), grpc::StatusCode::NOT_FOUND,
                "no-such-array");
  v1::DownloadToSharedMemoryRequest no_destination;
  no_destination.set_handle(array.handle());
  ExpectRefused(Download(no_destination), grpc::StatusCode::INVALID_ARGUMENT, "destination");
  // A refused download wrote nothing.
  EXPECT_EQ(segment.Read(4096), std::string(4096, '\0'));
}

DISTARRAY_INSTANTIATE_BACKENDS(SharedMemoryTest);

// The SDK's choice, seen from the daemon's log (--log_level=debug logs every transfer and its
// path), and the daemon with the feature off.
class SharedMemoryChoiceTest : public ::testing::Test {
 protected:
  void Start(const std::string& shared_memory) {
    Daemon::Options options;
    options.extra_flags = {"--log_level=debug", "--shared_memory=" + shared_memory};
    auto started = Daemon::Start(options);
    ASSERT_TRUE(started.ok()) << started.status();
    daemon_ = *std::move(started);
  }
  void TearDown() override {
    if (daemon_) EXPECT_TRUE(daemon_->alive()) << "distarrayd died during the test";
  }
  // How the daemon logged the `what` ("upload", "download") of `handle`: "shared-memory" or
  // "stream"; waits for the line, which comes up to 40 ms after the call (transfer_log.h).
  std::string PathLogged(const std::string& what, const std::string& handle) const {
    const std::string through_segment = absl::StrCat("] shared-memory ", what, " ", handle, ": ");
    const std::string streamed = absl::StrCat("] ", what, " ", handle, ": ");
    for (int attempt = 0; attempt < 500; ++attempt) {
      const std::string log = daemon_->log();
      if (log.find(through_segment) != std::string::npos) return "shared-memory";
      if (log.find(streamed) != std::string::npos) return "stream";
      absl::SleepFor(absl::Milliseconds(10));
    }
    return "(not logged)";
  }
  // How many `method` calls the daemon logged as ok (--log_level=debug logs each).
  int CallsLogged(const std::string& method) const {
    const std::string log = daemon_->log();
    int n = 0;
    for (size_t at = 0; (at = log.find("] " + method + " ok in", at)) != std::string::npos; ++at) {
      ++n;
    }
    return n;
  }
  std::unique_ptr<Daemon> daemon_;
};

// Starts a daemon with two tenants, alice and bob, and `flags`; Connect(token) connects as one.
class SharedMemoryTenantTest : public SharedMemoryChoiceTest {
 protected:
  static constexpr char kAlice[] = "alice-token-0123456789abcdef";
  static constexpr char kBob[] = "bob-token-0123456789abcdef";

  void StartWithTenants(std::vector<std::string> flags) {
    Daemon::Options options;
    options.tokens = {{"alice", kAlice}, {"bob", kBob}};
    options.extra_flags = {"--log_level=debug"};
    for (std::string& flag : flags) options.extra_flags.push_back(std::move(flag));
    auto started = Daemon::Start(options);
    ASSERT_TRUE(started.ok()) << started.status();
    daemon_ = *std::move(started);
  }
  absl::StatusOr<Client> Connect(const std::string& token,
                                 SharedMemoryUse use = SharedMemoryUse::kAlways) const {
    ConnectOptions options;
    options.token = token;
    options.shared_memory = use;
    return Client::Connect(daemon_->address(), 5000, options);
  }
};

TEST_F(SharedMemoryChoiceTest, AutomaticAboveTheThresholdStreamingBelow) {
  ASSERT_NO_FATAL_FAILURE(Start("on"));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
  EXPECT_TRUE(client.shared_memory_available());
  const std::vector<int32_t> large(1 << 19, 7);  // 2 MiB
  const std::vector<int32_t> small(1000, 3);
  ASSERT_OK_AND_ASSIGN(Array big, client.Upload<int32_t>(large, {1 << 19}, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(Array little, client.Upload<int32_t>(small, {1000}, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> big_back, big.Download<int32_t>());
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> little_back, little.Download<int32_t>());
  EXPECT_EQ(big_back, large);
  EXPECT_EQ(little_back, small);
  EXPECT_EQ(PathLogged("upload", big.handle()), "shared-memory") << daemon_->log();
  EXPECT_EQ(PathLogged("download", big.handle()), "shared-memory") << daemon_->log();
  EXPECT_EQ(PathLogged("upload", little.handle()), "stream") << daemon_->log();
  EXPECT_EQ(PathLogged("download", little.handle()), "stream") << daemon_->log();

  // Forbidden by the options: streams whatever the size.
  ConnectOptions never;
  never.shared_memory = SharedMemoryUse::kNever;
  ASSERT_OK_AND_ASSIGN(Client streaming, Client::Connect(daemon_->address(), 5000, never));
  ASSERT_OK_AND_ASSIGN(Array streamed,
                       streaming.Upload<int32_t>(large, {1 << 19}, {OnDevice(1, 0)}));
  EXPECT_EQ(PathLogged("upload", streamed.handle()), "stream");
}

// A refusal that streaming repeats is about the request, not shared memory: the client keeps
// using shared memory afterwards.
TEST_F(SharedMemoryChoiceTest, ARequestsOwnErrorDoesNotTurnSharedMemoryOff) {
  ASSERT_NO_FATAL_FAILURE(Start("on"));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
  ASSERT_TRUE(client.shared_memory_available());
  ArrayOptions sum_mode{OnDevice(1, 0), v1::MODE_SUM};
  ASSERT_OK_AND_ASSIGN(Array partial, client.Create({1 << 19}, v1::DTYPE_FLOAT32, sum_mode));
  const std::vector<float> values(1 << 19, 1.5f);  // 2 MiB: over the automatic threshold
  const absl::Status refused = partial.Write<float>(values);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_TRUE(client.shared_memory_available());
  ASSERT_OK_AND_ASSIGN(Array array, client.Upload<float>(values, {1 << 19}, {OnDevice(1, 0)}));
  EXPECT_EQ(PathLogged("upload", array.handle()), "shared-memory") << daemon_->log();
}

TEST_F(SharedMemoryChoiceTest, OffMeansNoHostIdRefusalsAndStreaming) {
  ASSERT_NO_FATAL_FAILURE(Start("off"));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, client.ServerInfo());
  EXPECT_TRUE(info.host_id().empty());
  EXPECT_FALSE(client.shared_memory_available());

  // The automatic SDK streams, and the data arrives.
  const std::vector<float> values(1 << 19, 0.25f);
  ASSERT_OK_AND_ASSIGN(Array array, client.Upload<float>(values, {1 << 19}, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, array.Download<float>());
  EXPECT_EQ(back, values);
  EXPECT_EQ(PathLogged("upload", array.handle()), "stream");

  // Forced, the refusal comes back as it is.
  ConnectOptions always;
  always.shared_memory = SharedMemoryUse::kAlways;
  ASSERT_OK_AND_ASSIGN(Client forced, Client::Connect(daemon_->address(), 5000, always));
  absl::StatusOr<Array> refused = forced.Upload<float>(values, {1 << 19}, {OnDevice(1, 0)});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("--shared_memory=off"), std::string::npos);
  std::vector<float> out(1 << 19);
  absl::Status download = forced.DownloadAll(array.info(), out.data(), 4 << 19);
  EXPECT_EQ(download.code(), absl::StatusCode::kFailedPrecondition) << download;
}

// Whole-array transfers above parallel_min_bytes go as one call per row range into one segment.
TEST_F(SharedMemoryChoiceTest, RowRangesInParallelThroughOneSegment) {
  ASSERT_NO_FATAL_FAILURE(Start("on"));
  ConnectOptions options;
  options.shared_memory = SharedMemoryUse::kAlways;
  options.parallel_min_bytes = 1 << 20;
  options.parallel_streams = 3;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address(), 5000, options));
  const int64_t rows = 1001, cols = 517;  // rows do not divide evenly among the streams
  std::vector<int64_t> values(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) values[i] = i * 7 - 3;
  ASSERT_OK_AND_ASSIGN(
      Array array,
      client.Upload<int64_t>(values, {rows, cols}, {BlockGrid2D(rows, cols, 2, 2, {0, 1, 2, 3})}));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> back, array.Download<int64_t>());
  EXPECT_EQ(back, values);
  EXPECT_EQ(PathLogged("upload", array.handle()), "shared-memory");
  const std::string log = daemon_->log();
  EXPECT_NE(log.find("over 3 streams"), std::string::npos) << log;
}

// Each stream's range goes in calls of at most 32 MiB of whole rows (the SDK's piece size): 96 MiB
// over 2 streams is 1500 rows each, 1024 and then 476 per call.
TEST_F(SharedMemoryChoiceTest, LargeRangesGoInSeveralCallsOfWholeRows) {
  ASSERT_NO_FATAL_FAILURE(Start("on"));
  ConnectOptions options;
  options.shared_memory = SharedMemoryUse::kAlways;
  options.parallel_min_bytes = 1 << 20;
  options.parallel_streams = 2;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address(), 5000, options));
  const int64_t rows = 3000, cols = 8192;
  std::vector<float> values(rows * cols);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& v : values) v = uniform(rng);
  ASSERT_OK_AND_ASSIGN(Array array,
                       client.Upload<float>(values, {rows, cols}, {Split(2, 0, rows, {0, 1})}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, array.Download<float>());
  EXPECT_TRUE(back == values) << "the round trip changed the values";
  // Two calls each way per stream (the daemon logs each call at debug level).
  const std::string log = daemon_->log();
  const auto calls = [&](const std::string& method) {
    int n = 0;
    for (size_t at = 0; (at = log.find(method + " ok in", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_EQ(calls("UploadFromSharedMemory"), 4) << log;
  EXPECT_EQ(calls("DownloadToSharedMemory"), 4) << log;
}

// The SDK keeps its last segment for the next transfer of at most its size, replaces it by a
// larger one, and releases what it holds when the client goes (the daemon logs each call).
TEST_F(SharedMemoryChoiceTest, TheSdkKeepsOneSegmentAndReleasesItWithTheClient) {
  ASSERT_NO_FATAL_FAILURE(Start("on"));
  std::vector<float> values(1 << 20, 2.0f);  // 4 MiB: over the automatic threshold
  std::vector<float> half(1 << 19, 3.0f);
  std::vector<float> twice(1 << 21, 4.0f);
  {
    ASSERT_OK_AND_ASSIGN(Client kept, Client::Connect(daemon_->address()));
    ASSERT_OK_AND_ASSIGN(Array array, kept.Upload<float>(values, {1 << 20}, {OnDevice(1, 0)}));
    ASSERT_OK_AND_ASSIGN(std::vector<float> back, array.Download<float>());
    EXPECT_EQ(back, values);
    EXPECT_EQ(CallsLogged("CreateSharedMemory"), 1) << daemon_->log();
    // A smaller transfer reuses the kept segment (a prefix of it).
    ASSERT_OK_AND_ASSIGN(Array smaller, kept.Upload<float>(half, {1 << 19}, {OnDevice(1, 0)}));
    ASSERT_OK_AND_ASSIGN(std::vector<float> smaller_back, smaller.Download<float>());
    EXPECT_EQ(smaller_back, half);
    EXPECT_EQ(CallsLogged("CreateSharedMemory"), 1);
    EXPECT_EQ(CallsLogged("ReleaseSharedMemory"), 0);
    // A larger one replaces it: the small one is released before the large one is made.
    ASSERT_OK_AND_ASSIGN(Array larger, kept.Upload<float>(twice, {1 << 21}, {OnDevice(1, 0)}));
    ASSERT_OK_AND_ASSIGN(std::vector<float> larger_back, larger.Download<float>());
    EXPECT_EQ(larger_back, twice);
    EXPECT_EQ(CallsLogged("CreateSharedMemory"), 2);
    EXPECT_EQ(CallsLogged("ReleaseSharedMemory"), 1);
  }
  EXPECT_EQ(CallsLogged("ReleaseSharedMemory"), 2) << "a segment outlived its client";
  // With no cache, none outlives its transfer.
  ConnectOptions uncached;
  uncached.shared_memory_cache_bytes = 0;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address(), 5000, uncached));
  ASSERT_OK_AND_ASSIGN(Array array, client.Upload<float>(values, {1 << 20}, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, array.Download<float>());
  EXPECT_EQ(back, values);
  EXPECT_EQ(CallsLogged("CreateSharedMemory"), 4);
  EXPECT_EQ(CallsLogged("ReleaseSharedMemory"), 4);
}

// After fork() the child holds a copy of its parent's kept segment: it must neither use it (the
// parent may be using it) nor release it. The child makes no call (gRPC is not fork-safe): its
// segment calls stand in and report what it asked for.
TEST_F(SharedMemoryChoiceTest, AForkedChildNeitherUsesNorReleasesItsParentsSegment) {
  ASSERT_NO_FATAL_FAILURE(Start("on"));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
  auto stub = std::shared_ptr<v1::ArrayService::Stub>(v1::ArrayService::NewStub(
      grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials())));
  const internal::SegmentCalls real =
      internal::MakeSegmentCalls(stub, [raw = RawStub(daemon_->address(), client)](
                                           grpc::ClientContext& c) { raw.AttachSession(c); });
  const pid_t parent = getpid();
  internal::SegmentCalls calls;
  calls.create = [real, parent](int64_t bytes) -> absl::StatusOr<std::string> {
    if (getpid() != parent) return absl::FailedPreconditionError("the child asked for one");
    return real.create(bytes);
  };
  calls.release = [real, parent](const std::string& name) {
    if (getpid() != parent) _exit(4);  // the child released its parent's segment
    real.release(name);
  };
  internal::SegmentCache cache(1 << 20, calls);
  ASSERT_OK_AND_ASSIGN(internal::SharedMemorySegment segment, cache.Take(4096));
  const std::string name = segment.name();
  cache.Give(std::move(segment));
  const pid_t child = fork();
  ASSERT_GE(child, 0) << std::strerror(errno);
  if (child == 0) {
    // No test macros in the child, and _exit.
    int code = 0;
    {
      absl::StatusOr<internal::SharedMemorySegment> taken = cache.Take(16);
      if (taken.ok()) code = taken->name() == name ? 2 : 3;  // it must have asked for a new one
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the parent's, 3: a call from the child, 4: released";
  EXPECT_TRUE(InDevShm(name)) << "the child removed " << name;
  absl::StatusOr<internal::SharedMemorySegment> mine = cache.Take(16);
  ASSERT_OK(mine.status());
  EXPECT_EQ(mine->name(), name);  // the parent's own, still kept for it
}

// A session's segments go when its lease runs out.
TEST_F(SharedMemoryChoiceTest, SegmentsEndWithTheirSession) {
  Daemon::Options options;
  options.extra_flags = {"--session_lease_seconds=1"};
  auto started = Daemon::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  daemon_ = *std::move(started);
  ConnectOptions no_keepalive;
  no_keepalive.keepalive = false;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address(), 5000, no_keepalive));
  const RawStub raw(daemon_->address(), client);
  ASSERT_OK_AND_ASSIGN(std::string name, CreateSegment(raw, 4096));
  EXPECT_TRUE(InDevShm(name));
  for (int attempt = 0; attempt < 100 && InDevShm(name); ++attempt) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_FALSE(InDevShm(name)) << "the segment outlived its session";
  // The session's id made anew has no segment of that name.
  EXPECT_EQ(ReleaseSegment(raw, name).error_code(), grpc::StatusCode::NOT_FOUND);
}

// The daemon exits without running destructors: the drain removes the segments first.
TEST_F(SharedMemoryChoiceTest, SegmentsGoWhenTheDaemonStops) {
  ASSERT_NO_FATAL_FAILURE(Start("on"));
  std::string name;
  {
    ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon_->address()));
    ASSERT_OK_AND_ASSIGN(name, CreateSegment(RawStub(daemon_->address(), client), 4096));
    EXPECT_TRUE(InDevShm(name));
  }
  const int status = daemon_->Terminate(/*timeout_ms=*/30000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(InDevShm(name)) << "the segment outlived the daemon";
  daemon_.reset();
}

// With tenants, shared memory is off unless the daemon is told otherwise, and the SDK streams.
TEST_F(SharedMemoryTenantTest, OffWithTenantsUnlessTheFlagSaysOn) {
  ASSERT_NO_FATAL_FAILURE(StartWithTenants({}));
  ASSERT_OK_AND_ASSIGN(Client alice, Connect(kAlice, SharedMemoryUse::kAuto));
  const RawStub alice_raw(daemon_->address(), alice, kAlice);
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, alice.ServerInfo());
  EXPECT_TRUE(info.host_id().empty());
  EXPECT_EQ(info.limits().max_shared_memory_segments(), 0);
  EXPECT_FALSE(alice.shared_memory_available());
  const absl::StatusOr<std::string> refused = CreateSegment(alice_raw, 4096);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("--shared_memory=on"), std::string::npos)
      << refused.status();
  const std::vector<float> values(1 << 19, 0.5f);
  ASSERT_OK_AND_ASSIGN(Array array, alice.Upload<float>(values, {1 << 19}, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, array.Download<float>());
  EXPECT_EQ(back, values);
  EXPECT_EQ(PathLogged("upload", array.handle()), "stream");
  // Forced, the refusal comes back as it is.
  ASSERT_OK_AND_ASSIGN(Client forced, Connect(kAlice, SharedMemoryUse::kAlways));
  const absl::Status status = forced.Upload<float>(values, {1 << 19}, {OnDevice(1, 0)}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
}

// Tenant B reaches neither tenant A's segment (read or write) nor its arrays, and learns nothing
// from the answers: the same NOT_FOUND as for a name that does not exist, no size.
TEST_F(SharedMemoryTenantTest, AnotherTenantsSegmentIsNotFoundAndUntouched) {
  ASSERT_NO_FATAL_FAILURE(StartWithTenants({"--shared_memory=on"}));
  ASSERT_OK_AND_ASSIGN(Client alice, Connect(kAlice));
  ASSERT_OK_AND_ASSIGN(Client bob, Connect(kBob));
  const RawStub alice_raw(daemon_->address(), alice, kAlice);
  const RawStub bob_raw(daemon_->address(), bob, kBob);
  ASSERT_TRUE(alice.shared_memory_available());
  const int64_t n = 1000, bytes = n * 4;
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) + 0.25f;
  TestSegment segment(alice_raw, bytes);
  segment.Write(values.data(), bytes);
  const std::string before = segment.Read(bytes);

  const auto upload_from = [](const RawStub& c, v1::SharedMemoryRange range) {
    v1::UploadFromSharedMemoryRequest request;
    v1::ArraySpec* spec = request.mutable_header()->mutable_new_array();
    spec->mutable_shape()->add_dims(range.bytes() / 4);
    spec->set_dtype(v1::DTYPE_FLOAT32);
    *spec->mutable_index_map() = OnDevice(1, 0);
    *request.mutable_source() = std::move(range);
    grpc::ClientContext context;
    c.AttachSession(context);
    v1::UploadFromSharedMemoryResponse response;
    return c.stub().UploadFromSharedMemory(&context, request, &response);
  };
  ASSERT_OK_AND_ASSIGN(Array bobs,
                       bob.Upload<float>(std::vector<float>(n, -7.0f), {n}, {OnDevice(1, 0)}));
  const auto download_to = [](const RawStub& c, const std::string& handle,
                              v1::SharedMemoryRange range) {
    v1::DownloadToSharedMemoryRequest request;
    request.set_handle(handle);
    *request.mutable_destination() = std::move(range);
    grpc::ClientContext context;
    c.AttachSession(context);
    v1::DownloadToSharedMemoryResponse response;
    return c.stub().DownloadToSharedMemory(&context, request, &response);
  };
  v1::SharedMemoryRange missing = segment.Range(bytes, 0, bytes);
  missing.set_name("/distarray-shm-ffffffffffffffffffffffffffffffff");
  for (const v1::SharedMemoryRange& range :
       {segment.Range(bytes, 0, bytes), segment.Range(1 << 20, 0, bytes), missing}) {
    SCOPED_TRACE(range.ShortDebugString());
    const grpc::Status read = upload_from(bob_raw, range);
    EXPECT_EQ(read.error_code(), grpc::StatusCode::NOT_FOUND) << read.error_message();
    EXPECT_EQ(read.error_message(), absl::StrCat("source.name: ", kNotFoundMessage));
    const grpc::Status written = download_to(bob_raw, bobs.handle(), range);
    EXPECT_EQ(written.error_code(), grpc::StatusCode::NOT_FOUND) << written.error_message();
    EXPECT_EQ(written.error_message(), absl::StrCat("destination.name: ", kNotFoundMessage));
    EXPECT_EQ(written.error_message().find(std::to_string(bytes)), std::string::npos);
  }
  const grpc::Status released = ReleaseSegment(bob_raw, segment.name());
  EXPECT_EQ(released.error_code(), grpc::StatusCode::NOT_FOUND) << released.error_message();
  EXPECT_TRUE(InDevShm(segment.name()));
  EXPECT_EQ(segment.Read(bytes), before) << "bob's calls changed alice's segment";

  // Alice's own session reads it, and her arrays are not bob's to write or read either.
  ASSERT_TRUE(upload_from(alice_raw, segment.Range(bytes, 0, bytes)).ok());
  ASSERT_OK_AND_ASSIGN(Array array, alice.Upload<float>(values, {n}, {OnDevice(1, 0)}));
  std::vector<float> out(n);
  EXPECT_EQ(bob.DownloadThroughSharedMemory(array.handle(), {}, out.data(), bytes).code(),
            absl::StatusCode::kNotFound);
  v1::UploadHeader overwrite;
  overwrite.set_handle(array.handle());
  EXPECT_EQ(bob.UploadThroughSharedMemory(overwrite, out.data(), bytes).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK(alice.DownloadThroughSharedMemory(array.handle(), {}, out.data(), bytes));
  EXPECT_EQ(out, values);
  const absl::Status anonymous = Connect("").status();
  EXPECT_EQ(anonymous.code(), absl::StatusCode::kUnauthenticated) << anonymous;
  EXPECT_TRUE(daemon_->alive());
}

// Each tenant holds at most --shared_memory_max_segments segments of at most
// --shared_memory_max_bytes in all; the SDK streams a transfer past them.
TEST_F(SharedMemoryTenantTest, PerTenantBounds) {
  ASSERT_NO_FATAL_FAILURE(StartWithTenants(
      {"--shared_memory=on", "--shared_memory_max_segments=2", "--shared_memory_max_bytes=1MiB"}));
  ASSERT_OK_AND_ASSIGN(Client alice, Connect(kAlice, SharedMemoryUse::kAuto));
  ASSERT_OK_AND_ASSIGN(Client bob, Connect(kBob, SharedMemoryUse::kAuto));
  const RawStub alice_raw(daemon_->address(), alice, kAlice);
  const RawStub bob_raw(daemon_->address(), bob, kBob);
  ASSERT_OK_AND_ASSIGN(v1::GetServerInfoResponse info, alice.ServerInfo());
  EXPECT_EQ(info.limits().max_shared_memory_segments(), 2);
  EXPECT_EQ(info.limits().max_shared_memory_bytes(), 1 << 20);
  const absl::Status too_large = CreateSegment(alice_raw, (1 << 20) + 1).status();
  EXPECT_EQ(too_large.code(), absl::StatusCode::kResourceExhausted) << too_large;
  EXPECT_NE(too_large.message().find("--shared_memory_max_bytes"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(std::string first, CreateSegment(alice_raw, 600 << 10));
  const absl::Status over_bytes = CreateSegment(alice_raw, 500 << 10).status();
  EXPECT_EQ(over_bytes.code(), absl::StatusCode::kResourceExhausted) << over_bytes;
  ASSERT_OK_AND_ASSIGN(std::string second, CreateSegment(alice_raw, 4096));
  const absl::Status over_count = CreateSegment(alice_raw, 16).status();
  EXPECT_EQ(over_count.code(), absl::StatusCode::kResourceExhausted) << over_count;
  EXPECT_NE(over_count.message().find("--shared_memory_max_segments"), std::string::npos);
  // Bob's bounds are his own.
  ASSERT_OK_AND_ASSIGN(std::string bobs, CreateSegment(bob_raw, 1 << 20));
  ASSERT_TRUE(ReleaseSegment(bob_raw, bobs).ok());
  // Alice's SDK, with no room left, streams, and keeps trying shared memory afterwards.
  const std::vector<int32_t> values(1 << 18, 9);  // 1 MiB
  ASSERT_OK_AND_ASSIGN(Array array, alice.Upload<int32_t>(values, {1 << 18}, {OnDevice(1, 0)}));
  EXPECT_EQ(PathLogged("upload", array.handle()), "stream");
  EXPECT_TRUE(alice.shared_memory_available());
  // Released, the room comes back and the SDK's transfer goes through shared memory.
  ASSERT_TRUE(ReleaseSegment(alice_raw, first).ok());
  ASSERT_TRUE(ReleaseSegment(alice_raw, second).ok());
  ASSERT_OK_AND_ASSIGN(Array again, alice.Upload<int32_t>(values, {1 << 18}, {OnDevice(1, 0)}));
  EXPECT_EQ(PathLogged("upload", again.handle()), "shared-memory") << daemon_->log();
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> back, again.Download<int32_t>());
  EXPECT_EQ(back, values);
}

TEST_F(SharedMemoryChoiceTest, TheFlagsTakeOnlyTheirValues) {
  for (const std::string& flag :
       {std::string("--shared_memory=maybe"), std::string("--shared_memory_max_segments=-1"),
        std::string("--shared_memory_max_bytes=lots")}) {
    Daemon::Options options;
    options.extra_flags = {flag};
    auto started = Daemon::Start(options);
    ASSERT_FALSE(started.ok()) << flag;
    EXPECT_NE(started.status().message().find(flag.substr(0, flag.find('='))), std::string::npos)
        << started.status();
  }
}

}  // namespace
}  // namespace distarray::testing
