from .extract_feature import get_data_by_profiled_results, get_feature_parser
from .utils import collect_kernel_data
